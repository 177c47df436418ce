-- bcode's options: the defaults, merged with what setup{} is given.
local M = {}

M.defaults = {
  -- The server command. bcode-ls must be on PATH, or give its full path.
  cmd = { 'bcode-ls', '--stdio' },
  -- Filetypes whose buffers attach to bcode-ls: the languages bcode judges.
  filetypes = { 'go', 'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact', 'rust' },
  -- Files or directories that mark a workspace root (searched upwards).
  root_markers = { '.git' },
  -- Start a task right after :BcodeTask creates it.
  run_on_create = true,
  -- Ask before :BcodeTasks accepts or rejects a task.
  confirm = true,
  -- When a run ends (verified, blocked, failed): say so and offer the
  -- task's diff, accept (verified only) and reject through vim.ui.select.
  notify_end = true,
  -- Keys of the :BcodeTasks buffer.
  keys = {
    accept = 'a', reject = 'r', resume = 'R', cancel = 'c',
    diff = 'd', events = '<CR>', refresh = 'u', close = 'q', help = 'g?',
  },
  -- The :BcodePack floating window: a fraction of the editor's size.
  float = { width = 0.8, height = 0.8, border = 'rounded' },
  -- Open the quickfix window after :BcodeEvidence fills it.
  open_quickfix = true,
  -- Passed to the LSP client as on_attach(client, bufnr).
  on_attach = nil,
  -- Extra settings for the client config (capabilities, flags, ...).
  client = {},
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  return M.options
end

return M
