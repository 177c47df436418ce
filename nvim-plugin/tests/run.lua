-- A small headless test runner (no plugin manager):
--   nvim --headless -u NONE -i NONE -c "luafile tests/run.lua"
-- Loads tests/test_*.lua (each returns a list of {name, fn}), runs them in
-- order in this one Neovim, prints "ok"/"not ok" lines and exits non-zero
-- when one fails. BCODE_TEST_FILTER runs only tests whose name matches.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local root = vim.fn.fnamemodify(here, ':h')
vim.opt.runtimepath:prepend(root)
package.path = here .. '/?.lua;' .. package.path

local out = io.stdout
local function say(s) out:write(s .. '\n'); out:flush() end

-- BCODE_TEST_FILES (comma-separated names in tests/) runs those files
-- instead of test_*.lua.
local files = {}
local only = os.getenv('BCODE_TEST_FILES')
if only and only ~= '' then
  for name in only:gmatch('[^,]+') do files[#files + 1] = here .. '/' .. vim.trim(name) end
else
  files = vim.fn.glob(here .. '/test_*.lua', false, true)
  table.sort(files)
end
local filter = os.getenv('BCODE_TEST_FILTER')
local pass, fail, n = 0, 0, 0
for _, f in ipairs(files) do
  local ok, tests = pcall(dofile, f)
  if not ok then
    say('not ok - loading ' .. f .. ': ' .. tostring(tests))
    fail = fail + 1
    tests = {}
  end
  for _, t in ipairs(tests) do
    if not filter or t[1]:find(filter, 1, true) then
      n = n + 1
      local start = vim.loop.hrtime()
      local ok2, err = xpcall(t[2], debug.traceback)
      local ms = math.floor((vim.loop.hrtime() - start) / 1e6)
      if ok2 then
        pass = pass + 1
        say(('ok %d - %s (%d ms)'):format(n, t[1], ms))
      else
        fail = fail + 1
        say(('not ok %d - %s (%d ms)'):format(n, t[1], ms))
        for line in tostring(err):gmatch('[^\n]+') do say('#   ' .. line) end
      end
    end
  end
end
say(('# pass %d fail %d (nvim %s)'):format(pass, fail, tostring(vim.version().major .. '.' .. vim.version().minor .. '.' .. vim.version().patch)))
if fail > 0 or pass == 0 then vim.cmd('cquit 1') else vim.cmd('qall!') end
