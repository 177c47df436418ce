-- bcode-ls for Neovim 0.11+'s vim.lsp.config / vim.lsp.enable:
--   vim.lsp.enable('bcode_ls')
-- (require('bcode').setup{} does this and adds bcode's commands).
return {
  cmd = { 'bcode-ls', '--stdio' },
  filetypes = { 'go', 'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact', 'rust' },
  root_markers = { '.git' },
  capabilities = { window = { showDocument = { support = true }, workDoneProgress = true } },
}
