-- A surviving mutant in Neovim, in any language bcode-ls serves: bcode-ls
-- attaches to the file's buffer, a save shows the survivor as bcode's
-- diagnostic on its exact range, and bcode's code actions are offered
-- there.
--   nvim --headless -u NONE -i NONE -c "luafile tests/survivor.lua"
-- Run by editors/editorstest (TestNeovimTypeScriptSurvivor,
-- TestNeovimRustSurvivor), which passes:
--   BCODE_LS, BCODE_SV_FILE (the changed file), BCODE_SV_FILETYPE (what
--   Neovim must detect), BCODE_SV_LINE and BCODE_SV_COL (the survivor's
--   0-based start), BCODE_SV_MESSAGE (text the message must hold),
--   BCODE_SV_COVERING, BCODE_SV_TEST_FILE and BCODE_SV_TEST_LINE (the test
--   that ran against it, its file relative to the repository, and the
--   0-based line it is declared on).
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ':h'))
package.path = here .. '/?.lua;' .. package.path
local h = require('helpers')

local file = vim.fn.resolve(h.env('BCODE_SV_FILE'))
local filetype = h.env('BCODE_SV_FILETYPE')
local line, col = tonumber(h.env('BCODE_SV_LINE')), tonumber(h.env('BCODE_SV_COL'))
local message = h.env('BCODE_SV_MESSAGE')
local what = 'a surviving mutant in ' .. vim.fn.fnamemodify(file, ':t')

-- code_action_titles asks bcode-ls for the code actions at d's line, as
-- Neovim's own code_action does: the line's diagnostics in the context,
-- turned back into the server's LSP form (Neovim keeps only part of it in
-- user_data.lsp: not the source, the range or the message).
local function code_action_titles(client, d)
  local line = vim.lsp.diagnostic.get_line_diagnostics(0, d.lnum)
  h.ok(#line > 0, 'Neovim gives the line\'s diagnostics back in LSP form')
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    range = { start = { line = d.lnum, character = d.col }, ['end'] = { line = d.end_lnum, character = d.end_col } },
    context = { diagnostics = line },
  }
  local resp = vim.lsp.buf_request_sync(0, 'textDocument/codeAction', params, 30000)
  h.ok(resp and resp[client.id], 'bcode-ls answered textDocument/codeAction')
  h.ok(not resp[client.id].err, 'textDocument/codeAction failed: ' .. vim.inspect(resp[client.id].err))
  local titles = {}
  for _, a in ipairs(resp[client.id].result or {}) do table.insert(titles, a.title) end
  return titles
end

local function has(titles, prefix)
  for _, t in ipairs(titles) do
    if t:sub(1, #prefix) == prefix then return true end
  end
  return false
end

local function run()
  vim.cmd('filetype on')
  require('bcode').setup({ cmd = { h.env('BCODE_LS'), '--stdio', '--debounce', '100ms' } })
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  h.eq(filetype, vim.bo.filetype, 'filetype')
  local client = h.wait(20000, function()
    local c = require('bcode.lsp').client()
    return c and c.initialized and vim.lsp.buf_is_attached(0, c.id) and c
  end, 'bcode-ls to attach to the buffer')
  vim.cmd('write')
  local found = vim.wait(180000, function()
    for _, d in ipairs(vim.diagnostic.get(0)) do
      if d.source == 'bcode' and d.message:find(message, 1, true) then return true end
    end
  end, 100)
  local d
  for _, x in ipairs(vim.diagnostic.get(0)) do
    if x.source == 'bcode' and x.message:find(message, 1, true) then d = x end
  end
  h.ok(found and d, 'no bcode diagnostic says ' .. message .. ' after 180 s; the buffer has ' .. vim.inspect(vim.tbl_map(function(x)
    return { x.lnum, x.col, x.source, x.message }
  end, vim.diagnostic.get(0))))
  h.eq(vim.diagnostic.severity.WARN, d.severity, 'severity')
  h.eq(line, d.lnum, 'line (0-based)')
  h.eq(col, d.col, 'column (0-based)')
  local data = d.user_data.lsp.data
  h.ok(type(data) == 'table' and data.verdict == 'survived', 'the diagnostic carries the mutant: ' .. vim.inspect(data))
  -- The test that ran against it, found where it is declared.
  local test = data.tests and data.tests[1]
  h.ok(test and test.name == h.env('BCODE_SV_COVERING'), 'the covering test: ' .. vim.inspect(data.tests))
  h.ok(test.location and vim.endswith(test.location.uri, '/' .. h.env('BCODE_SV_TEST_FILE'))
    and test.location.range.start.line == tonumber(h.env('BCODE_SV_TEST_LINE')),
    'the covering test\'s declaration: ' .. vim.inspect(test.location))
  local titles = code_action_titles(client, d)
  for _, want in ipairs({ 'bcode: Show mutant diff: `>` → `>=`', 'bcode: Add a test for this boundary' }) do
    h.ok(has(titles, want), ('no %q among the code actions %s'):format(want, vim.inspect(titles)))
  end
  io.stdout:write('\n# actions ' .. table.concat(titles, ' | ') .. '\n')
end

local ok, err = xpcall(run, debug.traceback)
if ok then
  io.stdout:write('ok - ' .. what .. '\n# pass 1 fail 0\n')
  vim.cmd('qall!')
else
  io.stdout:write('not ok - ' .. what .. '\n' .. tostring(err) .. '\n# pass 0 fail 1\n')
  vim.cmd('cquit 1')
end
