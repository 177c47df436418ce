-- bcode for Neovim: bcode-ls's evidence diagnostics and code actions through
-- the built-in LSP client, and commands for tasks, context packs and
-- evidence. See :help bcode.
local M = {}

local config = require('bcode.config')

--- setup configures bcode and starts attaching buffers (see :help bcode-setup).
function M.setup(opts)
  config.set(opts)
  local lsp = require('bcode.lsp')
  local tasks = require('bcode.tasks')
  local evidence = require('bcode.evidence')
  local cmd = vim.api.nvim_create_user_command
  cmd('BcodeTask', function(a) tasks.create(a.line1, a.line2, a.args) end,
    { range = true, nargs = '?', desc = 'bcode: create a task from the selected lines' })
  cmd('BcodeTasks', function() tasks.open() end, { desc = 'bcode: list the tasks of this workspace' })
  cmd('BcodePack', function(a) evidence.pack(a.line1, a.line2) end,
    { range = true, desc = 'bcode: preview the context pack of the selection' })
  cmd('BcodeEvidence', function(a) evidence.run(a.bang) end,
    { bang = true, desc = 'bcode: run evidence, surviving mutants into the quickfix list (! = last report only)' })
  cmd('BcodeCancel', function()
    local n = lsp.cancel_progress()
    lsp.notify(n > 0 and ('asked bcode-ls to cancel %d running job%s'):format(n, n == 1 and '' or 's') or 'nothing to cancel')
  end, { desc = 'bcode: cancel what bcode-ls is running (evidence, pack)' })
  cmd('BcodeRestart', function() lsp.restart() end,
    { desc = 'bcode: stop bcode-ls, start it again for the same workspaces and attach their buffers' })
  M.helptags()
  lsp.enable()
end

--- helptags makes :help bcode work for a plain runtimepath install, which
--- has no doc/tags (a plugin manager would run :helptags).
function M.helptags()
  local src = debug.getinfo(1, 'S').source:sub(2)
  local doc = vim.fn.fnamemodify(src, ':p:h:h:h') .. '/doc'
  if vim.fn.isdirectory(doc) == 1 and vim.fn.filereadable(doc .. '/tags') == 0 and vim.fn.filewritable(doc) == 2 then
    pcall(vim.cmd, 'silent! helptags ' .. vim.fn.fnameescape(doc))
  end
end

--- statusline is a component for 'statusline': running work, else this
--- buffer's surviving mutants (see :help bcode-statusline).
function M.statusline(bufnr) return require('bcode.status').statusline(bufnr) end

M.config = config

return M
