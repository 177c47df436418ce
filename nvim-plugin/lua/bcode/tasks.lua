-- :BcodeTasks, a scratch buffer listing the workspace's tasks with keys to
-- accept, reject, resume, cancel and see a task's diff and events; and
-- :BcodeTask, a task from a selection.
local config = require('bcode.config')
local lsp = require('bcode.lsp')
local ui = require('bcode.ui')

local M = {}

-- The list buffer (one at a time) and the tasks shown in it, by line.
local state = { buf = nil, tasks = {}, first = 3 }

local function err_text(err)
  return type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
end

--- line is how one task reads in the list.
function M.line(t)
  local last = t.lastEvent and t.lastEvent.kind or ''
  local verdict = (t.verdict and t.verdict ~= t.status) and t.verdict or ''
  -- Where the work is while it runs: attempt and turn.
  local work = ''
  if t.attempt and t.attempt ~= vim.NIL and t.attempt > 0 and (t.status == 'running' or t.status == 'queued') then
    work = ('a%d t%d'):format(t.attempt, (t.turn ~= vim.NIL and t.turn) or 0)
  end
  return ('%-10s  %-9s  %-10s  %-7s  %-16s  %s'):format(t.id, t.status, verdict, work, last, t.goal)
end

local function render()
  local buf = state.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then return end
  local k = config.options.keys
  local lines = {
    ('bcode tasks   %s accept  %s reject  %s resume  %s cancel  %s diff  %s events  %s refresh  %s help'):format(
      k.accept, k.reject, k.resume, k.cancel, k.diff, k.events, k.refresh, k.help),
    ('%-10s  %-9s  %-10s  %-7s  %-16s  %s'):format('ID', 'STATUS', 'VERDICT', 'WORK', 'LAST EVENT', 'GOAL'),
  }
  for _, t in ipairs(state.tasks) do lines[#lines + 1] = M.line(t) end
  if #state.tasks == 0 then lines[#lines + 1] = '(no tasks in this workspace: create one with :BcodeTask on a selection)' end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

--- refresh fetches bcode/tasks into the list buffer; cb() runs after.
function M.refresh(cb)
  lsp.request('bcode/tasks', vim.empty_dict(), function(err, result)
    if err then
      lsp.notify('listing the tasks: ' .. err_text(err), vim.log.levels.ERROR)
    else
      state.tasks = result.tasks or {}
      render()
    end
    if cb then cb(err) end
  end)
end

local function current()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  return state.tasks[row - state.first + 1]
end

local function git(repo, args)
  local cmd = { 'git', '-C', repo }
  vim.list_extend(cmd, args)
  local out = vim.fn.systemlist(cmd)
  return out, vim.v.shell_error
end

--- accept_message is the confirmation: what happens to the current branch
--- (engine/task's Accept: fast-forward when the branch has not moved since
--- the task's base, else cherry-pick; never a push; refused when dirty).
function M.accept_message(task)
  local repo, base, branch = task.repo, task.base, task.branch
  local head = git(repo, { 'rev-parse', 'HEAD' })[1] or ''
  local name, code = git(repo, { 'symbolic-ref', '--short', '-q', 'HEAD' })
  local where = (code == 0 and name[1]) and ('your current branch ' .. name[1]) or ('your detached HEAD ' .. head:sub(1, 7))
  local n = tonumber(git(repo, { 'rev-list', '--count', base .. '..' .. branch })[1]) or 0
  local commits = n .. (n == 1 and ' commit' or ' commits')
  local how
  if head == base then
    how = ('%s will be fast-forwarded to %s (%s).'):format(where, branch, commits)
  else
    how = ('the %s of %s will be cherry-picked onto %s, which moved since the base %s.'):format(commits, branch, where, base:sub(1, 7))
  end
  local dirty = #git(repo, { 'status', '--porcelain', '--untracked-files=no' }) > 0
  local msg = ('Accept task %s?\n%s\nNothing is pushed.'):format(task.id, how)
  if dirty then msg = msg .. '\nYour working tree has uncommitted changes: bcode will refuse until you commit or stash them.' end
  return msg, dirty
end

-- confirm is vim.fn.confirm, replaceable by tests.
M.confirm = function(msg, choices) return vim.fn.confirm(msg, choices, 2) end

-- What a lifecycle command is doing, for its error message.
local doing = {
  ['bcode.task.accept'] = 'accepting', ['bcode.task.reject'] = 'rejecting',
  ['bcode.task.resume'] = 'resuming', ['bcode.task.cancel'] = 'cancelling',
}

local function lifecycle(cmd, t, done, args)
  lsp.command(cmd, args or { id = t.id }, function(err, r)
    if err then
      lsp.notify(('%s task %s: %s'):format(doing[cmd] or cmd, t.id, err_text(err)), vim.log.levels.ERROR)
    else
      lsp.notify(('task %s is %s%s'):format(r.id, r.status, r.message and (': ' .. r.message) or ''))
      M.refresh()
    end
    if done then done(err, r) end
  end)
end

local function detail(id, cb)
  lsp.request('bcode/task', { id = id }, function(err, d)
    if err then
      lsp.notify('reading task ' .. id .. ': ' .. err_text(err), vim.log.levels.ERROR)
      return
    end
    cb(d)
  end)
end

-- shown_digest is the digest (sha256:...) of each task's change as its
-- diff buffer last showed it (bcode/taskDiff). Accept passes it back, and
-- bcode-ls refuses, landing nothing, when the change is another now.
M.shown_digest = {}

-- with_digest calls cb with the digest of the change the user was shown:
-- the diff buffer's, else the change as bcode-ls reads it now (which the
-- confirmation then names).
local function with_digest(id, cb)
  if M.shown_digest[id] then return cb(M.shown_digest[id]) end
  lsp.request('bcode/taskDiff', { id = id }, function(err, r)
    if err then
      lsp.notify('the diff of task ' .. id .. ': ' .. err_text(err), vim.log.levels.ERROR)
      return
    end
    cb(r.digest)
  end)
end

function M.accept(t, done)
  t = t or current()
  if not t then return end
  if t.status ~= 'verified' then
    lsp.notify(('task %s is %s, not verified: only a verified task can be accepted'):format(t.id, t.status), vim.log.levels.WARN)
    return
  end
  detail(t.id, function(d)
    local msg, dirty = M.accept_message(d.task)
    if dirty then
      lsp.notify(msg, vim.log.levels.ERROR)
      return
    end
    with_digest(t.id, function(digest)
      if digest then msg = msg .. '\nChange ' .. digest end
      if config.options.confirm and M.confirm(msg, '&Accept\n&Cancel') ~= 1 then return end
      lifecycle('bcode.task.accept', t, done, { id = t.id, digest = digest })
    end)
  end)
end

function M.reject(t, done)
  t = t or current()
  if not t then return end
  local msg = ('Reject task %s? Its work on %s is thrown away; your branch is not touched.'):format(t.id, t.branch)
  if config.options.confirm and M.confirm(msg, '&Reject\n&Cancel') ~= 1 then return end
  lifecycle('bcode.task.reject', t, done)
end

function M.resume(t, done) t = t or current(); if t then lifecycle('bcode.task.resume', t, done) end end
function M.cancel(t, done) t = t or current(); if t then lifecycle('bcode.task.cancel', t, done) end end

--- diff_lines is what the diff buffer shows for a bcode/taskDiff answer:
--- what was left out and why (binary, large and submodule files, a cut)
--- as '#' lines, then git's unified diff.
function M.diff_lines(r)
  local lines = {}
  for _, n in ipairs(r.notes or {}) do lines[#lines + 1] = '# bcode: ' .. n end
  for _, f in ipairs(r.files or {}) do
    if f.omitted == 'binary' and f.note then lines[#lines + 1] = '# bcode: ' .. f.note end
  end
  if r.diff and r.diff ~= '' then
    vim.list_extend(lines, vim.split(r.diff:gsub('\n$', ''), '\n', { plain = true }))
  elseif #(r.files or {}) == 0 and #lines == 0 then
    lines[#lines + 1] = '# bcode: the task has not changed anything'
  end
  return lines
end

--- diff opens the task's change in a new tab as a diff buffer. The change
--- comes from bcode-ls (bcode/taskDiff), which reads the task's branch
--- with hardened git and leaves binary and large files out.
function M.diff(t)
  t = t or current()
  if not t then return end
  lsp.request('bcode/taskDiff', { id = t.id }, function(err, r)
    if err then
      lsp.notify('the diff of task ' .. t.id .. ': ' .. err_text(err), vim.log.levels.ERROR)
      return
    end
    vim.cmd('tabnew')
    local buf = ui.scratch(table.concat(M.diff_lines(r), '\n'), 'bcode://task/' .. t.id .. '/diff', 'diff')
    vim.b[buf].bcode_diff = { id = r.id, base = r.base, head = r.head, branch = r.branch, digest = r.digest, files = #(r.files or {}), truncated = r.truncated or false }
    M.shown_digest[r.id] = r.digest
    vim.api.nvim_win_set_buf(0, buf)
  end)
end

--- verification_lines are the task's reproduction (--reproduce: the
--- command, the pinned oracle tests) and its last check's verification
--- level (reached, required, what is missing), from bcode/task's detail.
function M.verification_lines(d)
  local lines = {}
  local o = d.oracle
  if o and o ~= vim.NIL then
    lines[#lines + 1] = 'reproduce ' .. o.command
    local tests = (o.tests ~= vim.NIL and o.tests) or {}
    if #tests == 0 then lines[#lines + 1] = 'oracle not pinned yet: the run reproduces it on the base first' end
    for _, t in ipairs(tests) do
      lines[#lines + 1] = ('oracle %s:%s:%s'):format(t.language, t.package, t.name)
    end
  end
  local v = d.verification
  local r = v and v ~= vim.NIL and v.report
  if r and r ~= vim.NIL and r.level and r.level ~= vim.NIL then
    local missing = (r.level_missing and r.level_missing ~= vim.NIL and r.level_missing ~= '') and ('; missing for ' .. r.level_missing) or ''
    lines[#lines + 1] = ('level %s reached, %s required%s'):format(r.level, r.level_required or '?', missing)
  end
  return lines
end

--- events shows the task's detail and events in a split.
function M.events(t)
  t = t or current()
  if not t then return end
  detail(t.id, function(d)
    local k = d.task
    local lines = {
      ('task %s: %s'):format(k.id, k.goal),
      ('status %s%s%s'):format(k.status, k.verdict and (', verdict ' .. k.verdict) or '', k.reason and (' — ' .. k.reason) or ''),
      ('branch %s from base %s, %d attempt(s)'):format(k.branch, k.base, #(d.attempts or {})),
    }
    vim.list_extend(lines, M.verification_lines(d))
    lines[#lines + 1] = ''
    if (d.eventsOmitted or 0) > 0 then lines[#lines + 1] = ('(%d older events not shown)'):format(d.eventsOmitted) end
    for _, e in ipairs(d.events or {}) do
      local data = (e.data ~= nil and e.data ~= vim.NIL) and (' ' .. vim.fn.json_encode(e.data)) or ''
      lines[#lines + 1] = ('#%d  %s  %s%s'):format(e.seq, e.at, e.kind, data)
    end
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, ui.scratch(table.concat(lines, '\n'), 'bcode://task/' .. k.id .. '/events', 'bcode-events'))
  end)
end

--- open shows the task list (creating its buffer once).
function M.open(cb)
  if not (state.buf and vim.api.nvim_buf_is_valid(state.buf)) then
    state.buf = ui.scratch('', 'bcode://tasks', 'bcode-tasks')
    vim.bo[state.buf].bufhidden = 'hide'
    local k = config.options.keys
    local map = function(key, f, desc)
      vim.keymap.set('n', key, function() f() end, { buffer = state.buf, nowait = true, desc = desc })
    end
    map(k.accept, M.accept, 'bcode: accept task')
    map(k.reject, M.reject, 'bcode: reject task')
    map(k.resume, M.resume, 'bcode: resume task')
    map(k.cancel, M.cancel, 'bcode: cancel task')
    map(k.diff, M.diff, 'bcode: task diff')
    map(k.events, M.events, 'bcode: task events')
    map(k.refresh, function() M.refresh() end, 'bcode: refresh tasks')
    map(k.close, function() vim.cmd('close') end, 'bcode: close')
    map(k.help, M.help, 'bcode: help')
  end
  -- One list window: a second :BcodeTasks goes back to it instead of
  -- stacking another split.
  local win = vim.fn.bufwinid(state.buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, state.buf)
  end
  M.refresh(cb)
  return state.buf
end

--- help_lines are the keys of the list, as g? shows them.
function M.help_lines()
  local k = config.options.keys
  return {
    'bcode tasks: keys on a task\'s line',
    '',
    ('  %-6s accept (a verified task only; asks first, never pushes)'):format(k.accept),
    ('  %-6s reject (the record stays; your branch is untouched)'):format(k.reject),
    ('  %-6s resume a blocked, failed or cancelled task'):format(k.resume),
    ('  %-6s cancel a queued or running task'):format(k.cancel),
    ('  %-6s the task\'s diff in a new tab'):format(k.diff),
    ('  %-6s the task\'s events in a split'):format(k.events),
    ('  %-6s refresh     %s close'):format(k.refresh, k.close),
    '',
    'More: :help bcode-tasks (run :helptags on the plugin\'s doc/ once if it is not found)',
  }
end

--- help shows the keys in a float: it needs no helptags, which a plain
--- runtimepath install does not have.
function M.help()
  local win, buf = ui.float(table.concat(M.help_lines(), '\n'), 'bcode tasks: keys', 'text')
  return win, buf
end

-- Live: a bcode/taskChanged notification updates the open list.
table.insert(lsp.task_listeners, function(c)
  local known = false
  for _, t in ipairs(state.tasks) do
    if t.id == c.id then
      t.status, t.verdict, t.reason = c.status, c.verdict, c.reason
      -- The event's own kind and time (RFC 3339) from the ledger; a server
      -- of the first version sent only `event`.
      local at = c.at
      if type(at) ~= 'string' or at == '' then at = os.date('!%Y-%m-%dT%H:%M:%SZ') end
      t.lastEvent = { seq = c.seq or 0, kind = c.kind or c.event, at = at }
      t.attempt, t.turn, t.summary = c.attempt, c.turn, c.summary
      known = true
    end
  end
  vim.schedule(function()
    if known then render() elseif state.buf and vim.api.nvim_buf_is_valid(state.buf) then M.refresh() end
    if c.ended and config.options.notify_end then M.announce_end(c) end
  end)
end)

-- pick is vim.ui.select, replaceable by tests.
M.pick = function(items, opts, cb) vim.ui.select(items, opts, cb) end

--- end_choices are what the end of a run offers: the diff, accept (a
--- verified task only) or resume, and reject.
function M.end_choices(c)
  if c.status == 'verified' then return { 'Diff', 'Accept', 'Reject' } end
  -- Nothing failed on the base: no change was made, and running it again
  -- runs the same tests on the same base.
  if c.status == 'not_reproducible' then return { 'Reject' } end
  return { 'Diff', 'Resume', 'Reject' }
end

--- announce_end tells the user a run ended and offers what to do next;
--- each choice goes through the list's own action (Accept asks first).
function M.announce_end(c)
  local t
  for _, x in ipairs(state.tasks) do if x.id == c.id then t = x end end
  t = t or { id = c.id, branch = 'bcode/' .. c.id, goal = c.id }
  t.status = c.status
  local why = (c.status ~= 'verified' and c.reason and c.reason ~= vim.NIL) and (': ' .. c.reason) or ''
  lsp.notify(('task %s is %s%s'):format(c.id, c.status, why), c.status == 'verified' and vim.log.levels.INFO or vim.log.levels.WARN)
  M.pick(M.end_choices(c), { prompt = ('bcode: task %s is %s'):format(c.id, c.status) }, function(choice)
    if choice == 'Diff' then M.diff(t)
    elseif choice == 'Accept' then M.accept(t)
    elseif choice == 'Resume' then M.resume(t)
    elseif choice == 'Reject' then M.reject(t) end
  end)
end

--- create_args builds bcode.task.create's argument for lines line1..line2
--- (1-based, inclusive) of buffer bufnr.
function M.create_args(bufnr, line1, line2, goal)
  local first = vim.trim(vim.api.nvim_buf_get_lines(bufnr, line1 - 1, line1, false)[1] or '')
  if goal == nil or goal == '' then
    local rel = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':.')
    goal = ('Change %s lines %d-%d: %s'):format(rel, line1, line2, first)
  end
  return {
    goal = goal,
    uri = vim.uri_from_bufnr(bufnr),
    range = { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2, character = 0 } },
    run = config.options.run_on_create,
  }
end

--- create is :BcodeTask: a task from the selected lines.
function M.create(line1, line2, goal, done)
  local bufnr = vim.api.nvim_get_current_buf()
  if goal == nil or goal == '' then
    goal = vim.fn.input('bcode task goal: ', M.create_args(bufnr, line1, line2).goal)
    if goal == '' then return end
  end
  lsp.command('bcode.task.create', M.create_args(bufnr, line1, line2, goal), function(err, r)
    if err then
      lsp.notify('creating the task: ' .. err_text(err), vim.log.levels.ERROR)
    else
      lsp.notify(('task %s %s'):format(r.id, r.message or r.status))
      if state.buf and vim.api.nvim_buf_is_valid(state.buf) then M.refresh() end
    end
    if done then done(err, r) end
  end, bufnr)
end

return M
