-- :checkhealth bcode. Neovim 0.7-0.9 report through require('health')
-- (report_*), 0.10+ through vim.health (start/ok/warn/error).
local config = require('bcode.config')
local lsp = require('bcode.lsp')

local M = {}

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

function M.check()
  local r = reporter()
  r.start('bcode')
  local v = vim.version()
  r.info(('Neovim %d.%d.%d: %s'):format(v.major, v.minor, v.patch,
    vim.fn.has('nvim-0.11') == 1 and 'vim.lsp.config/enable' or
    (vim.lsp.start and 'vim.lsp.start' or 'vim.lsp.start_client (0.7)')))

  local exe = config.options.cmd[1]
  local path = vim.fn.exepath(exe)
  if path == '' then
    r.error(('%s is not executable or not on PATH'):format(exe), { lsp.install_hint })
  else
    local out = vim.fn.system({ path, '-h' })
    if vim.v.shell_error ~= 0 and not out:find('usage: bcode%-ls') then
      r.error(('%s did not run: %s'):format(path, vim.trim(out)), { lsp.install_hint })
    else
      r.ok(('bcode-ls: %s'):format(path))
    end
  end
  if vim.fn.executable('git') == 1 then r.ok('git is on PATH') else r.error('git is not on PATH', { 'install git' }) end

  local buf = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  local root = name ~= '' and lsp.root_dir(name) or nil
  local c = lsp.client(buf)
  if c then
    r.ok(('bcode-ls is running for %s (client %d)'):format(c.config.root_dir or '?', c.id))
  elseif root then
    r.warn(('this buffer is in %s but bcode-ls is not attached'):format(root),
      { ('filetype %q must be one of %s'):format(vim.bo[buf].filetype, table.concat(config.options.filetypes, ', ')), 'call require("bcode").setup{} in your config' })
  else
    r.info('this buffer is not inside a workspace (no ' .. table.concat(config.options.root_markers, ', ') .. ' above it)')
  end

  local tags = vim.api.nvim_get_runtime_file('doc/tags', true)
  local found = false
  for _, t in ipairs(tags) do
    for _, l in ipairs(vim.fn.readfile(t)) do
      if l:find('^bcode%-tasks\t') then found = true break end
    end
  end
  if found then r.ok(':help bcode works') else r.warn(':help bcode has no tags', { 'run :helptags on the plugin\'s doc/ directory' }) end
end

return M
