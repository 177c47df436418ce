-- With bcode-ls missing: opening Go files says once how to install it,
-- raises no error, and :checkhealth bcode says the same.
--   nvim --headless -u NONE -i NONE -c "luafile tests/missing_server.lua"
-- (BCODE_FIXTURE_REPO: any git checkout with a Go file.)
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ':h'))
package.path = here .. '/?.lua;' .. package.path
local h = require('helpers')

local function run()
  local repo = h.env('BCODE_FIXTURE_REPO')
  vim.cmd('filetype on')
  require('bcode').setup({ cmd = { '/nonexistent/bcode-ls', '--stdio' } })
  vim.cmd('edit ' .. vim.fn.fnameescape(repo .. '/quota/quota.go'))
  vim.cmd('split ' .. vim.fn.fnameescape(repo .. '/quota/quota_test.go'))
  local said = {}
  for _, m in ipairs(h.messages) do
    if m.msg:find('bcode%-ls') then said[#said + 1] = m end
  end
  h.eq(1, #said, 'one message about the missing server: ' .. vim.inspect(h.messages))
  h.match(said[1].msg, 'not executable or not on PATH: install it in bcode\'s checkout with `editors/install%.sh neovim` %(or `go install %./cmd/%.%.%.`', 'the install command')
  h.eq(vim.log.levels.ERROR, said[1].level, 'level')
  h.ok(not said[1].msg:find('LspInfo'), 'no pointer at :LspInfo, which 0.7 lacks')
  h.eq('', vim.v.errmsg, 'no error raised')
  vim.cmd('checkhealth bcode')
  local report = h.buf_text(0)
  h.match(report, 'ERROR:? /nonexistent/bcode%-ls is not executable or not on PATH', 'health error')
  h.match(report, 'editors/install%.sh neovim', 'health advice')
end

local ok, err = xpcall(run, debug.traceback)
if ok then
  io.stdout:write('ok - missing bcode-ls\n# pass 1 fail 0\n')
  vim.cmd('qall!')
else
  io.stdout:write('not ok - missing bcode-ls\n' .. tostring(err) .. '\n# pass 0 fail 1\n')
  vim.cmd('cquit 1')
end
