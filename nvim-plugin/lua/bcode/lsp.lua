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

local function notify(msg, level)
  vim.notify('bcode: ' .. msg, level or vim.log.levels.INFO)
end
M.notify = notify

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
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ':t') } },
    capabilities = caps,
    -- Commands of code actions the client runs itself: the goal of
    -- "Create task from selection" is the user's to write.
    commands = {
      ['bcode.task.create'] = function(command, ctx) M.create_task(command, ctx) end,
    },
    handlers = {
      ['window/showDocument'] = show_document,
      ['bcode/taskChanged'] = task_changed,
      ['$/progress'] = on_progress,
    },
    on_attach = o.on_attach,
  }, o.client or {})
  return cfg
end

local function has(v) return vim.fn.has(v) == 1 end

M.install_hint = 'install it with `go install github.com/bcode-dev/bcode/cmd/bcode-ls@latest` (then make sure $(go env GOPATH)/bin is on PATH) or set cmd in require("bcode").setup{}'

-- Said once per session: a missing server is one message, not one per buffer.
local warned_missing = false

--- check_cmd reports whether the server command can run, telling the user
--- once how to install it when it cannot.
function M.check_cmd()
  local exe = config.options.cmd[1]
  if vim.fn.executable(exe) == 1 then return true end
  if not warned_missing then
    warned_missing = true
    notify(('%s is not executable or not on PATH: %s; :checkhealth bcode says more'):format(exe, M.install_hint), vim.log.levels.ERROR)
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

--- enable makes buffers of the configured filetypes attach.
function M.enable()
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
