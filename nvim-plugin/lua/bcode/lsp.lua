-- Starting bcode-ls and talking to it, on every Neovim from Debian's 0.7.2
-- to 0.11+: 0.7 has only vim.lsp.start_client + buf_attach_client, 0.8-0.10
-- have vim.lsp.start, 0.11 has vim.lsp.config/enable (with lsp/bcode_ls.lua
-- on the runtimepath).
local config = require('bcode.config')

local M = {}

M.name = 'bcode_ls'

local uv = vim.loop
-- Handlers of bcode/taskChanged, added by the UI modules.
M.task_listeners = {}
-- Per-root client ids started through vim.lsp.start_client (0.7 only).
local started = {}

--- root_dir is the nearest directory above path holding a root marker.
function M.root_dir(path)
  local dir = vim.fn.fnamemodify(path, ':p:h')
  while dir and dir ~= '' do
    for _, marker in ipairs(config.options.root_markers) do
      if uv.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then break end
    dir = parent
  end
  return nil
end

--- notify says msg with bcode's one prefix, "bcode: ", exactly once: a
--- message that already starts with it (or with "bcode-ls: ", as the
--- server's own messages may) is not prefixed again.
local function notify(msg, level)
  msg = tostring(msg):gsub('^bcode: ', ''):gsub('^bcode%-ls: ', '')
  vim.notify('bcode: ' .. msg, level or vim.log.levels.INFO)
end
M.notify = notify

-- window/showMessage through notify: one prefix, and the user's
-- vim.notify (0.7's own handler echoes "LSP[bcode_ls][Info] ...").
local message_levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.INFO }
local function show_message(_, result, _, _)
  if type(result) == 'table' and type(result.message) == 'string' then
    notify(result.message, message_levels[result.type] or vim.log.levels.INFO)
  end
  return result
end

-- window/showDocument for bcode's virtual documents: fetch the text with
-- bcode/documentContent (Neovim has no workspace/textDocumentContent) and
-- show it in a float; other URIs go to Neovim's own handler.
local function show_document(err, result, ctx, cfg)
  local uri = result and result.uri or ''
  if uri:match('^bcode%-pack:') or uri:match('^bcode%-mutant:') then
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    client.request('bcode/documentContent', { uri = uri }, function(e, r)
      if e then
        notify('cannot open ' .. uri .. ': ' .. (e.message or vim.inspect(e)), vim.log.levels.ERROR)
        return
      end
      -- A mutant's document is a unified diff; a pack is Markdown.
      local ft = uri:match('^bcode%-mutant:') and 'diff' or 'markdown'
      require('bcode.ui').float(r.text, uri, ft)
    end)
    return { success = true }
  end
  local default = vim.lsp.handlers['window/showDocument']
  if default then return default(err, result, ctx, cfg) end
  return { success = false }
end

-- progress holds the newest $/progress report of each token, for the
-- statusline and :BcodeCancel.
M.progress = {}
-- progress_seen is the newest 50 reports' token, kind and title (for tests
-- and :checkhealth-style questions about what ran).
M.progress_seen = {}

local function on_progress(err, result, ctx, cfg)
  local default = vim.lsp.handlers['$/progress']
  if default then pcall(default, err, result, ctx, cfg) end
  if not result or not result.value then return end
  local v, token = result.value, result.token
  M.progress_seen[#M.progress_seen + 1] = { token = token, kind = v.kind, title = v.title }
  if #M.progress_seen > 50 then table.remove(M.progress_seen, 1) end
  if v.kind == 'end' then
    M.progress[token] = nil
  elseif v.kind == 'report' and not M.progress[token] then
    return -- a report after its end (or of a server that was restarted)
  else
    local prev = M.progress[token] or {}
    M.progress[token] = {
      client_id = ctx.client_id,
      title = v.title or prev.title,
      message = v.message or prev.message,
      percentage = v.percentage or prev.percentage,
      cancellable = (v.cancellable == nil) and prev.cancellable or v.cancellable,
    }
  end
  pcall(vim.cmd, 'redrawstatus')
end

local function task_changed(_, result)
  for _, f in ipairs(M.task_listeners) do
    pcall(f, result)
  end
end

--- client_config is the config every Neovim version starts bcode-ls with.
function M.client_config(root)
  local o = config.options
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.window = caps.window or {}
  caps.window.showDocument = { support = true }
  caps.window.workDoneProgress = true
  local cfg = vim.tbl_deep_extend('force', {
    name = M.name,
    cmd = o.cmd,
    root_dir = root,
    workspace_folders = root and { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ':t') } } or nil,
    capabilities = caps,
    -- Commands of code actions the client runs itself: the goal of
    -- "Create task from selection" is the user's to write.
    commands = {
      ['bcode.task.create'] = function(command, ctx) M.create_task(command, ctx) end,
    },
    handlers = {
      ['window/showDocument'] = show_document,
      ['window/showMessage'] = show_message,
      ['bcode/taskChanged'] = task_changed,
      ['$/progress'] = on_progress,
    },
    on_attach = o.on_attach,
  }, o.client or {})
  -- bcode's own on_init and on_exit run first; the user's (client =
  -- { on_init = ..., on_exit = ... }) after them.
  local user = o.client or {}
  cfg.on_init = function(client, result)
    M.on_init(client, result)
    if user.on_init then return user.on_init(client, result) end
  end
  cfg.on_exit = function(code, signal, client_id)
    M.on_exit(code, signal, client_id, root)
    if user.on_exit then return user.on_exit(code, signal, client_id) end
  end
  M.watch_stderr(cfg.cmd)
  return cfg
end

-- The server's stderr: Neovim reads it and hands every chunk to
-- vim.lsp.log's error() (0.7: log.error("rpc", cmd, "stderr", chunk);
-- 0.10+: cmd[1]), the only place a plugin can see it on 0.7. bcode keeps
-- the last STDERR_KEEP lines per server executable, to say them when the
-- server dies. (Servers of several workspaces share the executable, so
-- their lines share the buffer.)
local STDERR_KEEP, STDERR_SHOW, STDERR_WIDTH = 40, 10, 400
M.stderr = {} -- executable -> { lines = {...}, partial = '' }
local stderr_watched = {}
local hooked = false

local function record_stderr(exe, chunk)
  local ring = M.stderr[exe]
  if not ring then
    ring = { lines = {}, partial = '' }
    M.stderr[exe] = ring
  end
  local text = ring.partial .. chunk
  local from = 1
  while true do
    local nl = text:find('\n', from, true)
    if not nl then break end
    local line = text:sub(from, nl - 1):gsub('\r$', '')
    if line ~= '' then
      ring.lines[#ring.lines + 1] = line:sub(1, STDERR_WIDTH)
      if #ring.lines > STDERR_KEEP then table.remove(ring.lines, 1) end
    end
    from = nl + 1
  end
  ring.partial = text:sub(from):sub(-STDERR_WIDTH)
end

--- stderr_lines is the last n lines (default STDERR_SHOW) the server
--- executable exe wrote to stderr, oldest first.
function M.stderr_lines(exe, n)
  local ring = M.stderr[exe or config.options.cmd[1]]
  if not ring then return {} end
  local all = vim.list_extend({}, ring.lines)
  if ring.partial ~= '' then all[#all + 1] = ring.partial end
  n = n or STDERR_SHOW
  local out = {}
  for i = math.max(1, #all - n + 1), #all do out[#out + 1] = all[i] end
  return out
end

--- watch_stderr keeps the stderr of servers started with cmd.
function M.watch_stderr(cmd)
  local exe = type(cmd) == 'table' and cmd[1] or nil
  if type(exe) ~= 'string' then return end
  stderr_watched[exe] = true
  if hooked then return end
  hooked = true
  local ok, log = pcall(require, 'vim.lsp.log')
  if not ok or type(log) ~= 'table' or type(log.error) ~= 'function' then return end
  local orig = log.error
  log.error = function(...)
    local n = select('#', ...)
    -- Neovim asks log.error() (no arguments) whether to log at all before
    -- it passes the chunk: say yes, so bcode sees the chunk even with the
    -- log off; the real log.error still decides what is written.
    if n == 0 then return true end
    local what, cmd_, kind, chunk = ...
    if what == 'rpc' and kind == 'stderr' and type(chunk) == 'string' then
      local e = type(cmd_) == 'table' and cmd_[1] or cmd_
      if stderr_watched[e] then pcall(record_stderr, e, chunk) end
    end
    return orig(...)
  end
end

-- A client's exit: M.stopping holds the clients someone asked to stop
-- (the user, :BcodeRestart, Neovim quitting), whose exit is no news.
M.stopping = {}
-- roots, server_info and whether initialize was answered, of the running
-- clients, by client id.
M.initialized = {}
M.roots = {}
M.server_info = {}
-- last_exit is the newest unasked exit: { root, message }.
M.last_exit = nil
-- restarting: the ids :BcodeRestart waits for, and what it does next.
local restarting = nil

--- on_init remembers what the server said of itself and marks the
--- client when anyone stops it.
function M.on_init(client, result)
  M.initialized[client.id] = true
  M.roots[client.id] = client.config and client.config.root_dir
  M.server_info[client.id] = type(result) == 'table' and result.serverInfo or nil
  local stop = client.stop
  if type(stop) == 'function' then
    client.stop = function(...)
      M.stopping[client.id] = true
      return stop(...)
    end
  end
end

local signal_names = { [1] = 'SIGHUP', [2] = 'SIGINT', [3] = 'SIGQUIT', [4] = 'SIGILL', [6] = 'SIGABRT', [7] = 'SIGBUS',
  [8] = 'SIGFPE', [9] = 'SIGKILL', [11] = 'SIGSEGV', [13] = 'SIGPIPE', [15] = 'SIGTERM' }

--- exit_message says how the server of root ended and what it last wrote.
function M.exit_message(code, signal, root, lines)
  local how
  if signal and signal ~= 0 then
    how = ('was killed by signal %d (%s)'):format(signal, signal_names[signal] or 'unknown')
  elseif code ~= 0 then
    how = ('exited with code %d'):format(code)
  else
    how = 'exited (code 0) without being asked to stop'
  end
  local msg = ('bcode-ls for %s %s'):format(root or '?', how)
  if #lines > 0 then
    msg = msg .. '; the last lines of its stderr:\n  ' .. table.concat(lines, '\n  ')
  else
    msg = msg .. '; it wrote nothing to stderr'
  end
  return msg .. '\n:BcodeRestart starts it again.'
end

--- on_exit runs when a bcode-ls process ends. On 0.7 it runs in a luv
--- callback: nothing here may call the API before vim.schedule.
function M.on_exit(code, signal, client_id, root)
  root = root or M.roots[client_id]
  local asked, initialized = M.stopping[client_id], M.initialized[client_id]
  M.stopping[client_id], M.roots[client_id], M.server_info[client_id], M.initialized[client_id] = nil, nil, nil, nil
  if root and started[root] == client_id then started[root] = nil end
  -- Its work ends with it: nothing of it stays in the statusline.
  for token, p in pairs(M.progress) do
    if p.client_id == client_id then M.progress[token] = nil end
  end
  vim.schedule(function() pcall(vim.cmd, 'redrawstatus') end)
  if restarting and restarting.waiting[client_id] then
    restarting.waiting[client_id] = nil
    if next(restarting.waiting) == nil then vim.schedule(restarting.next) end
  end
  if asked and (signal ~= 0 or code == 0) then return end
  -- It died (or failed its shutdown): say so once, with what it wrote
  -- last, after the rest of its stderr has been read. A server that died
  -- before it answered initialize (a bad flag in cmd, a broken install)
  -- says why first and its usage after: all its lines are said.
  local exe = config.options.cmd[1]
  vim.defer_fn(function()
    local msg = M.exit_message(code, signal, root, M.stderr_lines(exe, not initialized and STDERR_KEEP or nil))
    M.last_exit = { root = root, message = msg }
    notify(msg, vim.log.levels.ERROR)
  end, 200)
end

local function has(v) return vim.fn.has(v) == 1 end

M.install_hint = 'install it in bcode\'s checkout with `editors/install.sh neovim` (or `go install ./cmd/...`; bcode looks in $(go env GOPATH)/bin too) or set cmd in require("bcode").setup{}'

-- The directories `go install` writes to, found once per session.
local go_bins = nil

--- go_bin_dirs are the directories `go install` writes to: $GOBIN, each
--- $(go env GOPATH)/bin, ~/go/bin. A Neovim started from a desktop often
--- has none of them on PATH. `go env` runs in the home directory with
--- GOTOOLCHAIN=local, never in the workspace, whose go.mod could otherwise
--- make go download and run a toolchain.
function M.go_bin_dirs()
  if go_bins then return go_bins end
  local dirs, seen = {}, {}
  local function add(d)
    if d and d ~= '' and not seen[d] then
      seen[d] = true
      dirs[#dirs + 1] = d
    end
  end
  add(vim.env.GOBIN)
  local gobin, gopath = '', vim.env.GOPATH or ''
  if vim.fn.has('win32') == 0 and vim.fn.executable('go') == 1 then
    local out = vim.fn.system({ 'sh', '-c', 'cd && GOTOOLCHAIN=local GOFLAGS= exec go env GOBIN GOPATH' })
    if vim.v.shell_error == 0 then
      local lines = vim.split(out, '\n', { plain = true })
      gobin = vim.trim(lines[1] or '')
      if vim.trim(lines[2] or '') ~= '' then gopath = vim.trim(lines[2]) end
    end
  end
  add(gobin)
  for _, p in ipairs(vim.split(gopath, ':', { plain = true })) do
    if p ~= '' then add(p .. '/bin') end
  end
  if vim.env.HOME and vim.env.HOME ~= '' then add(vim.env.HOME .. '/go/bin') end
  go_bins = dirs
  return dirs
end

--- resolve_cmd reports whether the server command can run: cmd[1] as it
--- is (a path, or a name on PATH), else a bare name in a directory `go
--- install` writes to, which then becomes cmd[1]'s full path so that the
--- client, its stderr and :checkhealth bcode name the same executable.
function M.resolve_cmd()
  local cmd = config.options.cmd
  local exe = cmd[1]
  if vim.fn.executable(exe) == 1 then return true end
  if exe:find('/', 1, true) then return false end
  for _, d in ipairs(M.go_bin_dirs()) do
    local p = d .. '/' .. exe
    if vim.fn.executable(p) == 1 then
      -- A new table: cmd may be the user's own, given to setup{}.
      config.options.cmd = vim.list_extend({ p }, cmd, 2)
      return true
    end
  end
  return false
end

--- not_found says that the server executable exe is missing, and where
--- bcode looked for a bare name.
function M.not_found(exe)
  local msg = ('%s is not executable or not on PATH'):format(exe)
  if not exe:find('/', 1, true) then msg = msg .. ' nor in ' .. table.concat(M.go_bin_dirs(), ', ') end
  return msg
end

-- Said once per session: a missing server is one message, not one per buffer.
local warned_missing = false

--- check_cmd reports whether the server command can run, telling the user
--- once how to install it when it cannot.
function M.check_cmd()
  if M.resolve_cmd() then return true end
  local exe = config.options.cmd[1]
  if not warned_missing then
    warned_missing = true
    notify(('%s: %s; :checkhealth bcode says more'):format(M.not_found(exe), M.install_hint), vim.log.levels.ERROR)
  end
  return false
end

--- attach connects buffer bufnr to bcode-ls (starting it for its root).
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then return nil end
  local root = M.root_dir(name)
  if not root then return nil end
  if not M.check_cmd() then return nil end
  if vim.lsp.start then -- 0.8 and later: reuses a client of the same name and root
    return vim.lsp.start(M.client_config(root), { bufnr = bufnr })
  end
  local id = started[root]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(M.client_config(root))
    if not id then
      notify('bcode-ls failed to start (' .. table.concat(config.options.cmd, ' ') .. ')', vim.log.levels.ERROR)
      return nil
    end
    started[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

-- The file the user was in last: :checkhealth bcode reports on it, not
-- on the health buffer that is current while the check runs.
local last_file_buf = nil

--- is_file_buffer: a buffer holding a file (not a scratch, help or
--- health buffer).
local function is_file_buffer(buf)
  return vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) ~= ''
end

--- user_buffer is the current buffer when it holds a file, else the file
--- buffer the user was in last, else the current buffer.
function M.user_buffer()
  local cur = vim.api.nvim_get_current_buf()
  if is_file_buffer(cur) then return cur end
  if last_file_buf and is_file_buffer(last_file_buf) then return last_file_buf end
  return cur
end

--- enable makes buffers of the configured filetypes attach.
function M.enable()
  local track = vim.api.nvim_create_augroup('bcode_user_buffer', { clear = true })
  vim.api.nvim_create_autocmd('BufEnter', {
    group = track,
    callback = function(args)
      if is_file_buffer(args.buf) then last_file_buf = args.buf end
    end,
  })
  if is_file_buffer(vim.api.nvim_get_current_buf()) then last_file_buf = vim.api.nvim_get_current_buf() end
  if has('nvim-0.11') and vim.lsp.config and vim.lsp.enable then
    if not M.check_cmd() then return end
    local cfg = M.client_config(nil)
    cfg.root_dir = nil
    cfg.workspace_folders = nil
    cfg.filetypes = config.options.filetypes
    cfg.root_markers = config.options.root_markers
    vim.lsp.config(M.name, cfg)
    vim.lsp.enable(M.name)
    return
  end
  local group = vim.api.nvim_create_augroup('bcode_attach', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = config.options.filetypes,
    callback = function(args) M.attach(args.buf) end,
  })
  -- Buffers already open when setup{} runs.
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.tbl_contains(config.options.filetypes, vim.bo[b].filetype) then
      M.attach(b)
    end
  end
end

local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients

--- client is the bcode-ls client of the current buffer's workspace (or any).
function M.client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local any
  for _, c in ipairs(get_clients()) do
    if c.name == M.name then
      if vim.lsp.buf_is_attached(bufnr, c.id) then return c end
      any = any or c
    end
  end
  return any
end

--- clients are the running bcode-ls clients.
function M.clients()
  local out = {}
  for _, c in ipairs(get_clients()) do
    if c.name == M.name then out[#out + 1] = c end
  end
  return out
end

-- How long :BcodeRestart waits for a server to shut down before it
-- terminates it.
M.restart_grace_ms = 5000

--- workspace_buffers are the loaded buffers bcode attaches: the
--- configured filetypes, inside a workspace.
local function workspace_buffers()
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.tbl_contains(config.options.filetypes, vim.bo[b].filetype)
      and vim.api.nvim_buf_get_name(b) ~= '' and M.root_dir(vim.api.nvim_buf_get_name(b)) then
      out[#out + 1] = b
    end
  end
  return out
end

--- start_again attaches the workspace buffers (starting a server per
--- root) and says what it did; done(started) is called with the roots.
local function start_again(was_running, done)
  -- Nothing of bcode-ls runs now: what the old servers wrote and how the
  -- last one died are not the new ones' story.
  M.last_exit = nil
  M.stderr[config.options.cmd[1]] = nil
  local per_root, order = {}, {}
  for _, b in ipairs(workspace_buffers()) do
    local id = M.attach(b)
    if id then
      local c = vim.lsp.get_client_by_id(id)
      local root = (c and c.config.root_dir) or M.root_dir(vim.api.nvim_buf_get_name(b))
      if not per_root[root] then order[#order + 1] = root end
      per_root[root] = (per_root[root] or 0) + 1
    end
  end
  if #order == 0 then
    notify(('%s; no buffer to start it for: open a file of a workspace (filetypes %s, a %s above it)'):format(
      was_running and 'stopped bcode-ls' or 'bcode-ls is not running',
      table.concat(config.options.filetypes, ', '), table.concat(config.options.root_markers, ' or ')), vim.log.levels.WARN)
  else
    local parts = {}
    for _, root in ipairs(order) do
      local n = per_root[root]
      parts[#parts + 1] = ('%s (%d buffer%s attached)'):format(root, n, n == 1 and '' or 's')
    end
    notify((was_running and 'restarted bcode-ls for %s' or 'started bcode-ls for %s'):format(table.concat(parts, ', ')))
  end
  if done then done(order) end
end

--- restart is :BcodeRestart: it stops the bcode-ls clients, waits for
--- them to exit (terminating one that has not after restart_grace_ms),
--- then starts bcode-ls again for the same roots and attaches the
--- workspace buffers. done(roots) runs at the end.
function M.restart(done)
  if restarting then
    notify('a restart of bcode-ls is already under way', vim.log.levels.WARN)
    return
  end
  if not M.resolve_cmd() then
    local exe = config.options.cmd[1]
    notify(('cannot restart: %s: %s'):format(M.not_found(exe), M.install_hint), vim.log.levels.ERROR)
    return
  end
  local clients = M.clients()
  if #clients == 0 then return start_again(false, done) end
  local state = { waiting = {} }
  state.next = function()
    if restarting ~= state then return end
    restarting = nil
    start_again(true, done)
  end
  for _, c in ipairs(clients) do state.waiting[c.id] = true end
  restarting = state
  for _, c in ipairs(clients) do
    M.stopping[c.id] = true
    vim.lsp.stop_client(c.id)
  end
  vim.defer_fn(function()
    if restarting ~= state then return end
    for id in pairs(state.waiting) do
      if vim.lsp.get_client_by_id(id) then vim.lsp.stop_client(id, true) else state.waiting[id] = nil end
    end
    if next(state.waiting) == nil then state.next() end
  end, M.restart_grace_ms)
  -- A process that outlives even that is left behind, not waited for.
  vim.defer_fn(state.next, 2 * M.restart_grace_ms)
end

--- request sends method to bcode-ls and calls cb(err, result).
function M.request(method, params, cb, bufnr)
  local c = M.client(bufnr)
  if not c then
    cb({ message = 'bcode-ls is not running: open a file of a git checkout (filetypes ' .. table.concat(config.options.filetypes, ', ') .. '), or see :checkhealth bcode' })
    return
  end
  c.request(method, params, function(err, result) cb(err, result) end, bufnr)
end

--- cancel asks bcode-ls to cancel its running work (every cancellable
--- progress it reported, or only token); it returns how many it asked.
function M.cancel_progress(token)
  local n = 0
  for t, p in pairs(M.progress) do
    if (token == nil or t == token) and p.cancellable then
      local c = vim.lsp.get_client_by_id(p.client_id)
      if c then
        c.notify('window/workDoneProgress/cancel', { token = t })
        n = n + 1
      end
    end
  end
  return n
end

--- create_task runs the code action "Create task from selection": with
--- `ask` (the server's suggested goal) it asks the user for the goal with
--- vim.ui.input first; the task is created and started (`run`).
function M.create_task(command, ctx)
  local a = vim.deepcopy((command.arguments or {})[1] or {})
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local send = function(goal)
    if goal == nil or vim.trim(goal) == '' then return end
    a.goal, a.ask = vim.trim(goal), nil
    client.request('workspace/executeCommand', { command = command.command, arguments = { a } }, function(err, r)
      if err then
        notify('creating the task: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        notify(('task %s %s'):format(r.id, r.message or r.status))
      end
    end, ctx.bufnr)
  end
  if not a.ask then return send(a.goal) end
  vim.ui.input({ prompt = 'bcode task goal: ', default = a.goal }, send)
end

--- command runs a bcode-ls workspace/executeCommand command.
function M.command(name, arg, cb, bufnr)
  M.request('workspace/executeCommand', { command = name, arguments = { arg } }, cb, bufnr)
end

return M
