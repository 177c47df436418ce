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
  -- What these buffers hold came from the worktree, a test run or the
  -- model: every window that shows one shows every character of it, with
  -- no conceal (a Markdown link's target, emphasis markers, a code fence)
  -- whatever the user's or a filetype plugin's 'conceallevel'.
  vim.api.nvim_create_autocmd({ 'BufWinEnter', 'FileType' }, {
    buffer = buf,
    callback = function()
      for _, win in ipairs(vim.fn.win_findbuf(buf)) do M.no_conceal(win) end
    end,
  })
  return buf
end

--- no_conceal makes win show its text as it is.
function M.no_conceal(win)
  vim.wo[win].conceallevel = 0
  vim.wo[win].concealcursor = ''
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
  M.no_conceal(win)
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, function() pcall(vim.api.nvim_win_close, win, true) end, { buffer = buf, nowait = true })
  end
  return win, buf
end

return M
