-- The plugin against the real bcode-ls (BCODE_LS) on the fixture checkout
-- (BCODE_FIXTURE_REPO: an uncommitted change whose `n <= limit` boundary no
-- test pins) with a ledger of its tasks (BCODE_STATE).
local h = require('helpers')
local eq, ok, match, wait = h.eq, h.ok, h.match, h.wait

local repo = vim.fn.resolve(h.env('BCODE_FIXTURE_REPO'))
local file = repo .. '/quota/quota.go'
local verified, failed = h.env('BCODE_FIXTURE_VERIFIED'), h.env('BCODE_FIXTURE_FAILED')
local verified_head, failed_head, base = h.env('BCODE_FIXTURE_VERIFIED_HEAD'), h.env('BCODE_FIXTURE_FAILED_HEAD'), h.env('BCODE_FIXTURE_BASE')

-- git asks the fixture checkout, for the tests' own assertions.
local function git(...)
  local out = vim.fn.systemlist(vim.list_extend({ 'git', '-C', repo }, { ... }))
  eq(0, vim.v.shell_error, 'git ' .. table.concat({ ... }, ' ') .. ': ' .. table.concat(out, '\n'))
  return table.concat(out, '\n')
end
local bcode_line = 5 -- `if n <= limit {` (1-based)

local tasks = require('bcode.tasks')
local evidence = require('bcode.evidence')
local confirmed = {}
tasks.confirm = function(msg) table.insert(confirmed, msg); return 1 end

local function client() return require('bcode.lsp').client() end

local function find_line(buf, pattern)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:find(pattern) then return i end
  end
end

-- lifecycle_result waits for what the user is told about a lifecycle
-- command: success (pattern_ok) or the server's refusal with its reason.
local doing = { ['bcode.task.accept'] = 'accepting', ['bcode.task.reject'] = 'rejecting' }
local function lifecycle_result(cmd, id, pattern_ok)
  local m
  local found = vim.wait(15000, function()
    m = h.take_message(pattern_ok) or h.take_message('^bcode: ' .. doing[cmd] .. ' task ' .. id .. ': ')
    return m
  end, 50)
  if not found then
    error('no result of ' .. cmd .. ' within 15s; messages: ' .. vim.inspect(h.messages), 2)
  end
  return m
end

return {
  { 'setup attaches the buffer to bcode-ls with this version\'s API', function()
    vim.cmd('filetype on')
    require('bcode').setup({ cmd = { h.env('BCODE_LS'), '--stdio', '--debounce', '100ms' } })
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
    eq('go', vim.bo.filetype, 'filetype')
    local c = wait(20000, function()
      local c = client()
      return c and c.initialized and vim.lsp.buf_is_attached(0, c.id) and c
    end, 'bcode-ls to attach')
    eq('bcode_ls', c.name, 'client name')
    eq(repo, c.config.root_dir, 'root')
    ok(c.server_capabilities or c.resolved_capabilities, 'capabilities')
    local caps = c.server_capabilities or {}
    if caps.executeCommandProvider then
      ok(vim.tbl_contains(caps.executeCommandProvider.commands, 'bcode.evidence.run'), 'bcode.evidence.run served')
    end
    if vim.fn.has('nvim-0.8') == 0 then
      ok(vim.lsp.start == nil, '0.7 has no vim.lsp.start: start_client was used')
    end
    -- A second buffer of the same root shares the client.
    vim.cmd('split ' .. vim.fn.fnameescape(repo .. '/quota/quota_test.go'))
    wait(5000, function() return vim.lsp.buf_is_attached(0, c.id) end, 'the test file to attach')
    vim.cmd('close')
  end },

  { 'diagnostics arrive for the surviving mutant after a save', function()
    vim.cmd('write')
    local d = wait(90000, function()
      for _, d in ipairs(vim.diagnostic.get(0)) do
        if d.source == 'bcode' and d.lnum == bcode_line - 1 then return d end
      end
    end, 'a bcode diagnostic on the boundary')
    eq(vim.diagnostic.severity.WARN, d.severity, 'severity')
    eq(4, d.col, 'column of `n <= limit`')
    match(d.message, '`n <= limit` → `n < limit`', 'message')
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    ok(code and code ~= '', 'the diagnostic carries the operator as its code')
  end },

  { 'the statusline counts the survivor; the mutant diff float is a diff; :checkhealth bcode', function()
    -- A run may still be going (the save and the disk watcher both ask):
    -- the statusline shows it while it lasts, then the survivor.
    if next(require('bcode.lsp').progress) then
      match(require('bcode').statusline(), '^bcode: evidence', 'statusline during a run (bcode said once)')
    end
    wait(90000, function() return next(require('bcode.lsp').progress) == nil end, 'running evidence to end')
    eq('bcode: 1 mutant survives', require('bcode').statusline(), 'statusline in the changed file')
    vim.cmd('new')
    eq('', require('bcode').statusline(), 'statusline in a buffer bcode-ls is not attached to')
    vim.cmd('close')
    local d
    for _, x in ipairs(vim.diagnostic.get(0)) do if x.source == 'bcode' then d = x end end
    local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data
    ok(type(data) == 'table' and type(data.id) == 'string' and data.id:match('^%x+$') and data.verdict == 'survived',
      'the diagnostic carries the mutant as data: ' .. vim.inspect(data))
    require('bcode.lsp').command('bcode.mutant.diff', { id = data.id }, function() end)
    local win = wait(15000, function()
      for _, w in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_config(w).relative ~= '' then return w end
      end
    end, 'the mutant diff float')
    local buf = vim.api.nvim_win_get_buf(win)
    eq('diff', vim.bo[buf].filetype, 'a mutant is shown as a diff')
    match(h.buf_text(buf), '%+%s+if n < limit {', 'the mutated line')
    vim.api.nvim_win_close(win, true)
    vim.cmd('checkhealth bcode')
    local report = h.buf_text(0)
    match(report, 'OK:? bcode%-ls found: ', 'bcode-ls found')
    match(report, 'OK:? bcode%-ls is running for ', 'the running client')
    vim.cmd('bwipeout!')
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
  end },

  { ':BcodeEvidence puts surviving mutants in the quickfix list', function()
    local done
    evidence.run(false, function(err, report) done = { err = err, report = report } end)
    wait(90000, function() return done end, 'the evidence run')
    ok(not done.err, 'no error: ' .. vim.inspect(done.err))
    local qf = vim.fn.getqflist({ items = 1, title = 1 })
    match(qf.title, '^bcode evidence: 1 of %d+ mutants survive$', 'title')
    ok(h.take_message('^bcode: evidence: 1 of %d+ mutants survive$'), 'the message says bcode once: ' .. vim.inspect(h.messages))
    local it = qf.items[1]
    eq(vim.fn.bufnr(file), it.bufnr, 'file')
    eq(bcode_line, it.lnum, 'line')
    eq(5, it.col, 'column (1-based)')
    eq('W', it.type, 'type')
    match(it.text, '^survived: `n <= limit` → `n < limit`', 'text')
    -- The run reported progress (begin … end), which the statusline shows
    -- while it lasts.
    local began, ended
    for _, p in ipairs(require('bcode.lsp').progress_seen) do
      if p.kind == 'begin' and p.title == 'bcode evidence' then began = p.token end
      if began and p.kind == 'end' and p.token == began then ended = true end
    end
    ok(began and ended, 'evidence progress began and ended: ' .. vim.inspect(require('bcode.lsp').progress_seen))
    eq(nil, next(require('bcode.lsp').progress), 'no progress left running')
    vim.cmd('BcodeCancel')
    ok(h.take_message('^bcode: nothing to cancel$'), ':BcodeCancel with nothing running says so')
    ok(vim.fn.getqflist({ winid = 1 }).winid ~= 0, 'quickfix window open')
    vim.cmd('cclose')
    -- The bang form reloads the last report without a new run.
    vim.fn.setqflist({}, 'r', { items = {} })
    done = nil
    vim.cmd('BcodeEvidence!')
    wait(20000, function() return #vim.fn.getqflist() > 0 end, 'the reloaded report')
    vim.cmd('cclose')
  end },

  { ':BcodeTasks lists the tasks with status, verdict and last event', function()
    vim.cmd('BcodeTasks')
    local buf = vim.api.nvim_get_current_buf()
    eq('bcode-tasks', vim.bo[buf].filetype, 'filetype')
    wait(15000, function() return find_line(buf, verified) end, 'the task list')
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    eq(5, #lines, 'header, columns and three tasks')
    match(lines[find_line(buf, verified)], '^' .. verified .. '%s+verified%s+task%.verified%s+Add a test for the boundary')
    match(lines[find_line(buf, failed)], '^' .. failed .. '%s+failed%s+unverified%s+attempt%.finished%s+Make Allowed count bursts')
    eq(false, vim.bo[buf].modifiable, 'read-only')
    -- Again: the same window, not a second split.
    local wins = #vim.api.nvim_list_wins()
    vim.cmd('wincmd p')
    vim.cmd('BcodeTasks')
    eq(wins, #vim.api.nvim_list_wins(), 'a second :BcodeTasks opens no window')
    eq(buf, vim.api.nvim_get_current_buf(), 'it goes back to the list')
    -- g? shows the keys in a float, with no helptags needed.
    vim.cmd('normal g?')
    local hb = vim.api.nvim_get_current_buf()
    ok(vim.api.nvim_win_get_config(0).relative ~= '', 'g? opens a float')
    match(h.buf_text(hb), 'a%s+accept', 'the keys')
    vim.cmd('normal q')
    eq(buf, vim.api.nvim_get_current_buf(), 'q goes back to the list')
  end },

  { 'keys in :BcodeTasks show a task\'s diff and events', function()
    local list = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { find_line(list, verified), 0 })
    vim.cmd('normal d')
    local diff = wait(15000, function()
      local b = vim.api.nvim_get_current_buf()
      return vim.bo[b].filetype == 'diff' and b
    end, 'the diff tab')
    local text = h.buf_text(diff)
    -- The diff is bcode-ls's answer (bcode/taskDiff) for the task's branch
    -- head against its base, not git run by the plugin.
    -- Its digest is what Accept passes back, so that only this change lands.
    local shown = vim.b[diff].bcode_diff
    match(shown.digest, '^sha256:%x+$', 'the change\'s digest')
    eq(shown.digest, tasks.shown_digest[verified], 'the digest Accept passes')
    shown.digest = nil
    eq({ id = verified, base = base, head = verified_head, branch = 'bcode/' .. verified, files = 3, truncated = false }, shown, 'the server\'s answer')
    match(text, '^diff %-%-git a/quota/boundary_test.go b/quota/boundary_test.go', 'first file, first line')
    -- What the server left out is said at the top, as comment lines.
    eq({ '# bcode: gen/big.txt is too large to show here', '# bcode: logo.png is a binary file (2 B before, 3 B after)', 'diff --git a/x b/x', '+a' },
      tasks.diff_lines({ notes = { 'gen/big.txt is too large to show here' }, files = { { path = 'logo.png', omitted = 'binary', note = 'logo.png is a binary file (2 B before, 3 B after)' } }, diff = 'diff --git a/x b/x\n+a\n' }), 'diff_lines')
    eq({ '# bcode: the task\'s branch does not exist' }, tasks.diff_lines({ notes = { 'the task\'s branch does not exist' }, files = {}, diff = '' }), 'no branch')
    match(text, '%+func TestAllowedAtTheLimit', 'added test')
    match(text, '%+%s+if n <= limit {', 'changed source')
    vim.cmd('tabclose')
    vim.api.nvim_set_current_win(vim.fn.bufwinid(list))
    vim.api.nvim_win_set_cursor(0, { find_line(list, verified), 0 })
    vim.cmd('execute "normal \\<CR>"')
    local ev = wait(15000, function()
      local b = vim.api.nvim_get_current_buf()
      return vim.bo[b].filetype == 'bcode-events' and b
    end, 'the events split')
    local evtext = h.buf_text(ev)
    match(evtext, '^task ' .. verified .. ': Add a test', 'header')
    match(evtext, 'task%.created.*attempt%.started.*check%.finished', 'events in order')
    vim.cmd('close')
    vim.api.nvim_set_current_win(vim.fn.bufwinid(list))
  end },

  { 'Accept refuses a task that is not verified and explains a dirty checkout', function()
    local list = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { find_line(list, failed), 0 })
    vim.cmd('normal a')
    ok(h.take_message('task ' .. failed .. ' is failed, not verified'), 'refusal for the failed task')
    vim.api.nvim_win_set_cursor(0, { find_line(list, verified), 0 })
    vim.cmd('normal a')
    local m = wait(15000, function() return h.take_message('Accept task ' .. verified) end, 'the accept notice')
    match(m.msg, 'uncommitted changes', 'the fixture checkout is dirty, so bcode would refuse')
    eq(0, #confirmed, 'no confirmation offered for a refused accept')
  end },

  { 'Reject throws the failed task\'s branch away and leaves main alone', function()
    eq(base, git('rev-parse', 'main'), 'main before')
    eq(failed_head, git('rev-parse', 'bcode/' .. failed), 'the failed task has a commit on its branch')
    local list = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { find_line(list, failed), 0 })
    vim.cmd('normal r')
    match(confirmed[1], '^Reject task ' .. failed, 'reject confirmation')
    local m = lifecycle_result('bcode.task.reject', failed, '^bcode: task ' .. failed .. ' is rejected$')
    match(m.msg, '^bcode: task ' .. failed .. ' is rejected$', 'the reject landed')
    wait(15000, function()
      local l = find_line(list, failed)
      return l and vim.api.nvim_buf_get_lines(list, l - 1, l, false)[1]:find('rejected')
    end, 'the list to show the rejected task')
    eq(base, git('rev-parse', 'main'), 'main after the reject')
    eq('', git('branch', '--list', 'bcode/' .. failed), 'the rejected branch is gone')
    eq(git('show', base .. ':quota/quota.go'), git('show', 'main:quota/quota.go'), 'main\'s quota.go')
  end },

  { 'Accept asks, saying the branch is fast-forwarded, then lands the task: main moves to its verified head', function()
    -- A clean checkout (the change set aside), so bcode may land the task.
    vim.fn.system({ 'git', '-C', repo, 'stash', '-q', '-u' })
    eq(0, vim.v.shell_error, 'git stash -u')
    local list = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { find_line(list, verified), 0 })
    vim.cmd('normal a')
    wait(15000, function() return #confirmed > 1 end, 'the confirmation')
    match(confirmed[2], '^Accept task ' .. verified .. '%?\nyour current branch main will be fast%-forwarded to bcode/' .. verified .. ' %(1 commit%)%.\nNothing is pushed%.\nChange sha256:%x+$')
    local m = lifecycle_result('bcode.task.accept', verified, '^bcode: task ' .. verified .. ' is accepted$')
    match(m.msg, '^bcode: task ' .. verified .. ' is accepted$', 'the accept landed')
    -- git really moved: main is the verified head, with the task's files.
    eq(verified_head, git('rev-parse', 'main'), 'main after the accept')
    eq(git('show', verified_head .. ':quota/boundary_test.go'), git('show', 'main:quota/boundary_test.go'), 'main\'s boundary_test.go')
    match(table.concat(vim.fn.readfile(repo .. '/quota/boundary_test.go'), '\n'), 'func TestAllowedAtTheLimit', 'the checkout has the task\'s file')
    eq('', git('status', '--porcelain'), 'a clean checkout')
    local d
    require('bcode.lsp').request('bcode/task', { id = verified, eventsLimit = 1 }, function(_, r) d = r end)
    wait(10000, function() return d end, 'bcode/task')
    eq('accepted', d.task.status, 'status in the ledger')
    eq('task.accepted', d.events[1].kind, 'the newest event')
    eq('fast-forward', d.events[1].data.method, 'how it landed')
    wait(15000, function()
      local l = find_line(list, verified)
      return l and vim.api.nvim_buf_get_lines(list, l - 1, l, false)[1]:find('accepted%s+verified%s+task%.accepted')
    end, 'the list to show the accepted task')
    -- Accepting again is refused, not repeated.
    vim.api.nvim_win_set_cursor(0, { find_line(list, verified), 0 })
    vim.cmd('normal a')
    ok(h.take_message('task ' .. verified .. ' is accepted, not verified'), 'a second accept is refused')
    eq(verified_head, git('rev-parse', 'main'), 'main after the refused second accept')
  end },

  { 'the list follows bcode/taskChanged live', function()
    local cmd = os.getenv('BCODE_APPEND_EVENT_CMD')
    if not cmd or cmd == '' then error('BCODE_APPEND_EVENT_CMD is not set') end
    local list = vim.api.nvim_get_current_buf()
    local running = h.env('BCODE_FIXTURE_RUNNING')
    vim.env.BCODE_HELPER_APPEND_TASK = running
    vim.env.BCODE_HELPER_APPEND_KIND = 'check.started'
    vim.fn.system(vim.fn.json_decode(cmd))
    vim.env.BCODE_HELPER_APPEND_TASK = nil
    eq(0, vim.v.shell_error, 'appending an event')
    wait(15000, function()
      local l = find_line(list, running)
      return l and vim.api.nvim_buf_get_lines(list, l - 1, l, false)[1]:find('check%.started')
    end, 'the running task\'s row to show check.started')
    vim.cmd('close')
  end },

  { ':BcodePack opens the context pack in a floating window', function()
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
    vim.cmd(('%d,%dBcodePack'):format(bcode_line - 1, bcode_line + 1))
    local win = wait(30000, function()
      for _, w in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_config(w).relative ~= '' then return w end
      end
    end, 'a floating window')
    local buf = vim.api.nvim_win_get_buf(win)
    match(vim.b[buf].bcode_title, '^bcode%-pack:', 'the pack URI')
    match(h.buf_text(buf), 'quota%.go', 'the pack names the selected file')
    eq('markdown', vim.bo[buf].filetype, 'filetype')
    vim.api.nvim_set_current_win(win)
    vim.cmd('normal q')
    ok(not vim.api.nvim_win_is_valid(win), 'q closes it')
  end },

  { ':BcodeTask creates a task from the selected lines', function()
    vim.cmd('edit! ' .. vim.fn.fnameescape(file))
    -- (The accept test stashed the change and landed the task: the file is the task's.)
    local args = tasks.create_args(0, 3, 5, 'Pin the boundary')
    eq({ start = { line = 2, character = 0 }, ['end'] = { line = 5, character = 0 } }, args.range, 'range')
    eq(vim.uri_from_fname(file), args.uri, 'uri')
    eq(true, args.run, 'run_on_create')
    vim.cmd('3,5BcodeTask Pin the boundary')
    local m = wait(15000, function()
      return h.take_message('^bcode: task %w+ created') or h.take_message('^bcode: creating the task: .*task engine')
    end, 'the created task')
    if m.msg:find('created') then
      -- The new task shows up in bcode/tasks with the selection's goal.
      local listed
      require('bcode.lsp').request('bcode/tasks', vim.empty_dict(), function(_, r) listed = r end)
      wait(10000, function() return listed end, 'bcode/tasks')
      local found = false
      for _, t in ipairs(listed.tasks) do if t.goal == 'Pin the boundary' then found = true end end
      ok(found, 'the new task is listed')
    end
    -- A bad request gets the server's reason, not silence.
    tasks.create(3, 3, '   ')
    wait(15000, function() return h.take_message('creating the task: .*the goal is empty') end, 'the empty-goal error')
  end },

  { 'every message says "bcode: " once, at its start', function()
    ok(h.one_prefix() > 5, 'the tests above said things: ' .. vim.inspect(h.all_messages))
    -- A message that already carries the prefix (the server's own say
    -- "bcode: task ..." or "bcode-ls: ...") is not prefixed again.
    local lsp = require('bcode.lsp')
    lsp.notify('bcode: task t-1 is blocked')
    lsp.notify('bcode-ls: initializationOptions: bad')
    local m = h.all_messages
    eq('bcode: task t-1 is blocked', m[#m - 1].msg, 'an already prefixed message')
    eq('bcode: initializationOptions: bad', m[#m].msg, 'a server-prefixed message')
    -- The server's window/showMessage goes through the same door.
    local handler = client().config.handlers['window/showMessage']
    handler(nil, { type = 3, message = 'bcode: task t-2 is running in another bcode process' }, { client_id = client().id }, {})
    eq('bcode: task t-2 is running in another bcode process', h.all_messages[#h.all_messages].msg, 'showMessage')
    eq(vim.log.levels.INFO, h.all_messages[#h.all_messages].level, 'showMessage level')
    h.one_prefix()
  end },
}
