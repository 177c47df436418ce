-- A statusline component: what bcode-ls is doing for this buffer.
--   set statusline+=%{v:lua.require'bcode'.statusline()}
local lsp = require('bcode.lsp')

local M = {}

--- survivors counts bcode's warnings (surviving mutants) in bufnr.
local function survivors(bufnr)
  local n = 0
  for _, d in ipairs(vim.diagnostic.get(bufnr, { severity = vim.diagnostic.severity.WARN })) do
    if d.source == 'bcode' then n = n + 1 end
  end
  return n
end

--- statusline is one short string: running work first (with its
--- percentage), else the surviving mutants of this buffer; '' when
--- bcode-ls is not attached, so it costs no space in other buffers.
function M.statusline(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local c = lsp.client(bufnr)
  if not c or not vim.lsp.buf_is_attached(bufnr, c.id) then return '' end
  for _, p in pairs(lsp.progress) do
    if p.client_id == c.id then
      -- The server's titles name bcode already ("bcode evidence"): the
      -- statusline says it once.
      local title = (p.title or 'working'):gsub('^bcode:? ', '')
      local s = 'bcode: ' .. title
      if p.percentage then s = s .. (' %d%%'):format(p.percentage) end
      if p.message and p.message ~= '' then s = s .. ' ' .. p.message end
      return s
    end
  end
  local n = survivors(bufnr)
  if n == 0 then return 'bcode' end
  return ('bcode: %d mutant%s survive%s'):format(n, n == 1 and '' or 's', n == 1 and 's' or '')
end

return M
