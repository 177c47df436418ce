-- Small UI pieces: a read-only floating window and scratch buffers.
local config = require('bcode.config')

local M = {}

local function lines_of(text)
  return vim.split((text or ''):gsub('\n$', ''), '\n', { plain = true })
end
M.lines_of = lines_of

--- scratch makes a read-only, unlisted buffer holding text.
function M.scratch(text, name, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines_of(text))
  vim.bo[buf].modifiable = false
  if filetype then vim.bo[buf].filetype = filetype end
  if name then pcall(vim.api.nvim_buf_set_name, buf, name) end
  return buf
end

--- float shows text in a centred floating window; q or <Esc> closes it.
--- filetype defaults to markdown.
function M.float(text, title, filetype)
  local o = config.options.float
  local cols, rows = vim.o.columns, vim.o.lines
  local width = math.max(20, math.floor(cols * o.width))
  local height = math.max(5, math.floor(rows * o.height))
  local buf = M.scratch(text, nil, filetype or 'markdown')
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor', style = 'minimal', border = o.border,
    width = width, height = height,
    row = math.floor((rows - height) / 2), col = math.floor((cols - width) / 2),
  })
  vim.b[buf].bcode_title = title
  vim.wo[win].wrap = true
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, function() pcall(vim.api.nvim_win_close, win, true) end, { buffer = buf, nowait = true })
  end
  return win, buf
end

return M
