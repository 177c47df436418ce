-- A surviving Python mutant in Neovim: bcode-ls attaches to a .py buffer,
-- and a save shows the survivor as a diagnostic on its exact range.
--   nvim --headless -u NONE -i NONE -c "luafile tests/python_survivor.lua"
-- (BCODE_LS; BCODE_PY_REPO: a checkout whose uncommitted change makes
-- `n > 10` the discount boundary of shop/price.py, tested only at 1 and 20.)
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ':h'))
package.path = here .. '/?.lua;' .. package.path
local h = require('helpers')

local function run()
  local repo = vim.fn.resolve(h.env('BCODE_PY_REPO'))
  vim.cmd('filetype on')
  require('bcode').setup({ cmd = { h.env('BCODE_LS'), '--stdio', '--debounce', '100ms' } })
  vim.cmd('edit ' .. vim.fn.fnameescape(repo .. '/shop/price.py'))
  h.eq('python', vim.bo.filetype, 'filetype')
  h.wait(20000, function()
    local c = require('bcode.lsp').client()
    return c and c.initialized and vim.lsp.buf_is_attached(0, c.id)
  end, 'bcode-ls to attach to the .py buffer')
  vim.cmd('write')
  local d = h.wait(180000, function()
    for _, d in ipairs(vim.diagnostic.get(0)) do
      if d.source == 'bcode' and d.severity == vim.diagnostic.severity.WARN and d.message:find('n >= 10', 1, true) then return d end
    end
  end, 'the surviving boundary mutant')
  h.eq(2, d.lnum, 'line of `if n > 10:` (0-based)')
  h.eq(7, d.col, 'column of `n > 10`')
  h.match(d.message, '`n > 10` → `n >= 10`', 'message')
end

local ok, err = xpcall(run, debug.traceback)
if ok then
  io.stdout:write('ok - a surviving Python mutant\n# pass 1 fail 0\n')
  vim.cmd('qall!')
else
  io.stdout:write('not ok - a surviving Python mutant\n' .. tostring(err) .. '\n# pass 0 fail 1\n')
  vim.cmd('cquit 1')
end
