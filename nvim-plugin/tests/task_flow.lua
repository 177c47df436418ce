-- The task flow against the real bcode-ls, its agent in the Docker sandbox
-- and the scripted model (BCODE_FLOW_REPO: a clean checkout whose base
-- config names them):
--   select lines → the code action "Create task from selection" → the goal
--   typed into vim.ui.input → the task runs; :BcodeTasks shows it running
--   with its attempt and turn → it ends verified → the end offers Diff,
--   Accept and Reject → Accept (confirmed) lands it on main.
--   nvim --headless -u NONE -i NONE -c "luafile tests/task_flow.lua"
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ':h'))
package.path = here .. '/?.lua;' .. package.path
local h = require('helpers')
local started = vim.loop.hrtime()
local function step(name) io.stdout:write(('step %d %s\n'):format(math.floor((vim.loop.hrtime() - started) / 1e6), name)); io.stdout:flush() end

local goal = 'Start the discount after 10 items, not at 10'

local function run()
  local repo = h.env('BCODE_FLOW_REPO')
  local file = repo .. '/price/price.go'
  vim.cmd('filetype on')
  require('bcode').setup({ cmd = { h.env('BCODE_LS'), '--stdio', '--no-evidence-on-open' } })
  local tasks = require('bcode.tasks')
  local confirmed = {}
  tasks.confirm = function(msg) confirmed[#confirmed + 1] = msg; return 1 end
  local offered, picked
  tasks.pick = function(items, opts, cb) offered = { items = items, prompt = opts.prompt }; picked = 'Accept'; cb('Accept') end
  local asked
  vim.ui.input = function(opts, cb) asked = opts; cb(goal) end
  -- The code action menu: pick "Create task from selection" (0.7 passes
  -- {client_id, action} tuples, later versions the action).
  local menu
  vim.ui.select = function(items, opts, cb)
    menu = {}
    for _, it in ipairs(items) do
      local a = it.action or it[2] or it
      menu[#menu + 1] = a.title
      if a.title == 'bcode: Create task from selection' then return cb(it) end
    end
    cb(nil)
  end

  -- Every bcode/taskChanged, for the failure message.
  local seen = {}
  table.insert(require('bcode.lsp').task_listeners, function(c)
    seen[#seen + 1] = ('%s#%s a%s t%s %s'):format(c.kind, tostring(c.seq), tostring(c.attempt), tostring(c.turn), c.ended and 'ended' or '')
  end)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  h.wait(30000, function()
    local c = require('bcode.lsp').client()
    return c and c.initialized and vim.lsp.buf_is_attached(0, c.id)
  end, 'bcode-ls to attach')
  step('attached')

  -- Lines 4-6: func Discount ... the if.
  if vim.lsp.buf.range_code_action then
    vim.lsp.buf.range_code_action(nil, { 4, 0 }, { 6, 1 })
  else
    vim.lsp.buf.code_action({ range = { start = { 4, 0 }, ['end'] = { 6, 1 } } })
  end
  local m = h.wait(30000, function() return h.take_message('^bcode: task %w+ created and started') end,
    'the created task (menu ' .. vim.inspect(menu) .. ', messages ' .. vim.inspect(h.messages) .. ')')
  h.ok(asked, 'vim.ui.input asked for the goal')
  h.match(asked.default, '^Change price/price%.go lines 4%-6: func Discount', 'the suggested goal names the selection')
  local id = m.msg:match('task (%w+) created')
  step('created ' .. id)

  -- The list shows it running, with its attempt and turn.
  local list = tasks.open()
  local row
  vim.wait(600000, function()
    for _, l in ipairs(vim.api.nvim_buf_get_lines(list, 0, -1, false)) do
      if l:find('^' .. id) and l:find('running%s+a1 t[1-9]') then row = l end
    end
    return row
  end, 50)
  if not row then
    error(('no row running with attempt 1 and a finished turn; list:\n%s\nnotifications: %s'):format(h.buf_text(list), table.concat(seen, ', ')))
  end
  h.match(row, goal:sub(1, 20), 'the row carries the typed goal')
  step('running: ' .. row)

  -- The end: verified, offered Diff/Accept/Reject; Accept (confirmed) lands it.
  local end_ms = tonumber(os.getenv('BCODE_FLOW_END_MS') or '') or 420000
  local ok_end = vim.wait(end_ms, function() return offered end, 50)
  if not ok_end then
    error(('the run did not end in %d ms; list:\n%s\nnotifications: %s'):format(end_ms, h.buf_text(list), table.concat(seen, ', ')))
  end
  h.eq({ 'Diff', 'Accept', 'Reject' }, offered.items, 'the end offers')
  h.match(offered.prompt, 'is verified', 'the end says verified')
  step('verified')
  h.wait(60000, function() return h.take_message('^bcode: task ' .. id .. ' is accepted') end,
    'the accept (messages ' .. vim.inspect(h.messages) .. ')')
  h.ok(#confirmed == 1 and confirmed[1]:find('fast%-forwarded'), 'accept asked first: ' .. vim.inspect(confirmed))
  step('accepted')
end

local ok, err = xpcall(run, debug.traceback)
if ok then
  io.stdout:write('ok - the task flow\n# pass 1 fail 0\n')
  vim.cmd('qall!')
else
  io.stdout:write('not ok - the task flow\n' .. tostring(err) .. '\n# pass 0 fail 1\n')
  vim.cmd('cquit 1')
end
