-- Assertions and waiting for the headless tests.
local M = {}

function M.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(('%s: want %s, got %s'):format(what or 'value', vim.inspect(want), vim.inspect(got)), 2)
  end
end

function M.ok(cond, what)
  if not cond then error(what or 'assertion failed', 2) end
  return cond
end

function M.match(s, pattern, what)
  if type(s) ~= 'string' or not s:find(pattern) then
    error(('%s: %s does not match %q'):format(what or 'string', vim.inspect(s), pattern), 2)
  end
end

--- wait until cond() is truthy (its value is returned) or fail after ms.
function M.wait(ms, cond, what)
  local v
  local ok = vim.wait(ms, function() v = cond(); return v end, 50)
  if not ok then error(('timed out after %d ms waiting for %s'):format(ms, what or 'a condition'), 2) end
  return v
end

--- Messages sent through vim.notify since the last take; all_messages
--- keeps every one, for the single-prefix check.
M.messages = {}
M.all_messages = {}
vim.notify = function(msg, level)
  table.insert(M.messages, { msg = msg, level = level })
  table.insert(M.all_messages, { msg = msg, level = level })
end

--- one_prefix fails unless every message bcode sent says "bcode: " at its
--- start and nowhere else. Neovim's own messages (0.7 says "Client 1 quit
--- with exit code 0 and signal 9" when a server is killed) are not bcode's.
function M.one_prefix()
  local n = 0
  for _, m in ipairs(M.all_messages) do
    if not m.msg:find('^Client %d+ quit with exit code') then
      n = n + 1
      if not m.msg:find('^bcode: ') then error(('a message without the prefix: %q'):format(m.msg), 2) end
      local _, count = m.msg:gsub('bcode: ', '')
      if count ~= 1 then error(('a message with "bcode: " %d times: %q'):format(count, m.msg), 2) end
      -- Nor a second "bcode" right after it ("bcode: bcode evidence: ...",
      -- "bcode: bcode/tasks failed"); the server's name, bcode-ls, is fine.
      if m.msg:find('^bcode: bcode[%s:/%.]') then error(('a message that says bcode twice: %q'):format(m.msg), 2) end
    end
  end
  return n
end

function M.take_message(pattern)
  for i, m in ipairs(M.messages) do
    if m.msg:find(pattern) then
      table.remove(M.messages, i)
      return m
    end
  end
end

function M.buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

function M.env(name)
  local v = os.getenv(name)
  if not v or v == '' then error(name .. ' is not set: run through `go test ./editors/editorstest`') end
  return v
end

return M
