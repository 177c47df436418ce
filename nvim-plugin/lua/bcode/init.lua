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
  lsp.enable()
end

M.config = config

return M
