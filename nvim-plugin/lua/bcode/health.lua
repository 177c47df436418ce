-- :checkhealth bcode. Neovim 0.7-0.9 report through require('health')
-- (report_*), 0.10+ through vim.health (start/ok/warn/error).
--
-- It reports on the user's buffer (the file they were in, not the health
-- buffer that is current while the check runs) and on every bcode-ls
-- client: initialized, version, root, and what the server says of Docker
-- and the model server (bcode/health).
local config = require('bcode.config')
local lsp = require('bcode.lsp')

local M = {}

-- How long the check waits for bcode/health (the server asks Docker and
-- the model server at once, each with a timeout of a few seconds).
M.health_timeout_ms = 15000

local function reporter()
  local h = vim.health or require('health')
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    info = h.info or h.report_info,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
  }
end

--- server_found reports whether the server command runs.
local function server_found(r)
  lsp.resolve_cmd()
  local exe = config.options.cmd[1]
  local path = vim.fn.exepath(exe)
  if path == '' then
    r.error(lsp.not_found(exe), { lsp.install_hint })
    return
  end
  local out = vim.fn.system({ path, '-h' })
  if vim.v.shell_error ~= 0 and not out:find('usage: bcode%-ls') then
    r.error(('%s did not run: %s'):format(path, vim.trim(out)), { lsp.install_hint })
  else
    r.ok(('bcode-ls found: %s'):format(path))
  end
end

--- user_buffer reports on the file the user was in.
local function user_buffer(r, buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or vim.bo[buf].buftype ~= '' then
    r.info('no file buffer to check: open a file of a workspace, then run :checkhealth bcode again')
    return
  end
  local rel = vim.fn.fnamemodify(name, ':~:.')
  local root = lsp.root_dir(name)
  if not root then
    r.info(('your buffer %s is not inside a workspace (no %s above it)'):format(rel, table.concat(config.options.root_markers, ', ')))
    return
  end
  local c = lsp.client(buf)
  if c and vim.lsp.buf_is_attached(buf, c.id) then
    r.ok(('your buffer %s is attached to bcode-ls (client %d)'):format(rel, c.id))
  elseif not vim.tbl_contains(config.options.filetypes, vim.bo[buf].filetype) then
    r.info(('your buffer %s has filetype %q; bcode attaches %s'):format(rel, vim.bo[buf].filetype, table.concat(config.options.filetypes, ', ')))
  else
    local advice = { 'call require("bcode").setup{} in your config', ':BcodeRestart starts it for the open buffers' }
    if lsp.last_exit and lsp.last_exit.root == root then table.insert(advice, 1, lsp.last_exit.message) end
    r.warn(('your buffer %s is in %s but bcode-ls is not attached'):format(rel, root), advice)
  end
end

--- server_health asks the client's server bcode/health; nil, why when it
--- did not answer.
local function server_health(c, buf)
  local resp, err = c.request_sync('bcode/health', vim.empty_dict(), M.health_timeout_ms, buf)
  if not resp then return nil, tostring(err or 'no answer') end
  if resp.err then return nil, resp.err.message or vim.inspect(resp.err) end
  return resp.result
end

--- client reports on one bcode-ls client.
local function client(r, c, buf)
  local root = c.config.root_dir or '?'
  r.start(('bcode-ls client %d'):format(c.id))
  r.ok(('bcode-ls is running for %s (client %d)'):format(root, c.id))
  if not c.initialized then
    r.warn('not initialized yet: bcode-ls has not answered initialize', { 'wait a moment and run :checkhealth bcode again; if it stays, see :BcodeRestart' })
    return
  end
  local info = lsp.server_info[c.id] or c.server_info or {}
  r.ok(('initialized: %s %s'):format(info.name or 'bcode-ls', info.version or '(no version given)'))
  r.ok(('root directory: %s'):format(root))
  local n = #vim.lsp.get_buffers_by_client_id(c.id)
  r.info(('%d buffer%s attached'):format(n, n == 1 and '' or 's'))
  local h, why = server_health(c, vim.lsp.buf_is_attached(buf, c.id) and buf or nil)
  if not h then
    r.error(('bcode-ls did not answer bcode/health: %s'):format(why), { 'a bcode-ls older than this plugin lacks it: install the one that came with it' })
    return
  end
  r.info(('bcode-ls %s, pid %d, serving %s'):format(h.version, h.pid, h.root))
  if h.docker.ok then
    r.ok(('Docker is reachable: %s'):format(h.docker.detail))
  else
    r.warn(('Docker is not reachable: %s'):format(h.docker.detail), { 'tasks run in Docker; evidence and packs do not need it' })
  end
  if h.model.ok then
    r.ok(('model server: %s'):format(h.model.detail))
  else
    r.warn(('model server %s is not reachable: %s'):format(h.model.endpoint or '?', h.model.detail), { 'tasks need a model; evidence and packs do not' })
  end
end

function M.check()
  local r = reporter()
  local buf = lsp.user_buffer()
  r.start('bcode')
  local v = vim.version()
  r.info(('Neovim %d.%d.%d: %s'):format(v.major, v.minor, v.patch,
    vim.fn.has('nvim-0.11') == 1 and 'vim.lsp.config/enable' or
    (vim.lsp.start and 'vim.lsp.start' or 'vim.lsp.start_client (0.7)')))
  server_found(r)
  if vim.fn.executable('git') == 1 then r.ok('git is on PATH') else r.error('git is not on PATH', { 'install git' }) end
  user_buffer(r, buf)
  local clients = lsp.clients()
  if #clients == 0 then
    if lsp.last_exit then
      r.error(lsp.last_exit.message)
    else
      r.info('no bcode-ls is running: it starts when a file of a workspace opens')
    end
  end
  local tags = vim.api.nvim_get_runtime_file('doc/tags', true)
  local found = false
  for _, t in ipairs(tags) do
    for _, l in ipairs(vim.fn.readfile(t)) do
      if l:find('^bcode%-tasks\t') then found = true break end
    end
  end
  if found then r.ok(':help bcode works') else r.warn(':help bcode has no tags', { 'run :helptags on the plugin\'s doc/ directory' }) end
  -- The client of the user's buffer first.
  table.sort(clients, function(a, b)
    local aa, ba = vim.lsp.buf_is_attached(buf, a.id), vim.lsp.buf_is_attached(buf, b.id)
    if aa ~= ba then return aa end
    return a.id < b.id
  end)
  for _, c in ipairs(clients) do client(r, c, buf) end
end

return M
