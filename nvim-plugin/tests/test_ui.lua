-- The plugin's windows show text from the worktree, a test run or the
-- model as it is: no conceal in a float or a split, whatever the global
-- 'conceallevel' and the filetype.
local h = require('helpers')
local eq = h.eq
local ui = require('bcode.ui')

local hostile = 'see [docs](https://evil.example) **bold** `code` \\u202e'

-- with_conceal runs fn with conceal on globally, as a user may have it,
-- and puts the options back for the tests that follow.
local function with_conceal(fn)
  local level, cursor = vim.o.conceallevel, vim.o.concealcursor
  vim.o.conceallevel, vim.o.concealcursor = 2, 'nvic'
  local ok, err = pcall(fn)
  vim.o.conceallevel, vim.o.concealcursor = level, cursor
  if not ok then error(err, 0) end
end

return {
  { 'a float shows its Markdown with no conceal', function() with_conceal(function()
    local win, buf = ui.float(hostile, 'pack', 'markdown')
    eq(0, vim.wo[win].conceallevel, 'conceallevel of the float')
    eq('', vim.wo[win].concealcursor, 'concealcursor of the float')
    eq({ hostile }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), 'the float holds the text as sent')
    vim.api.nvim_win_close(win, true)
  end) end },
  { 'a scratch buffer shown in a split has no conceal', function() with_conceal(function()
    local buf = ui.scratch(hostile, nil, 'markdown')
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
    eq(0, vim.wo.conceallevel, 'conceallevel of the split')
    vim.cmd('close')
  end) end },
}
