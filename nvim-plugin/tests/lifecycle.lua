-- The server's life as the user sees it, against the real bcode-ls
-- (BCODE_LS) on a fresh fixture checkout (BCODE_FIXTURE_REPO, whose
-- `n <= limit` boundary no test pins): :checkhealth bcode from the user's
-- buffer, the server killed (one notification with its last stderr
-- lines), :BcodeRestart (diagnostics again), a stop the user asked for
-- (no notification), and one "bcode: " prefix on every message.
--   BCODE_TEST_FILES=lifecycle.lua nvim --headless -u NONE -i NONE -c "luafile tests/run.lua"
local h = require('helpers')
local eq, ok, match, wait = h.eq, h.ok, h.match, h.wait

local repo = vim.fn.resolve(h.env('BCODE_FIXTURE_REPO'))
local file = repo .. '/quota/quota.go'
local boundary_line = 5 -- `if n <= limit {` (1-based)
local lsp = require('bcode.lsp')

-- A generous bound, not a speed target: an evidence run on a loaded
-- two-core machine takes a while.
local RUN_MS = 180000

local function attached_client()
  local c = lsp.client(vim.fn.bufnr(file))
  return c and c.initialized and vim.lsp.buf_is_attached(vim.fn.bufnr(file), c.id) and c
end

-- survivor_of waits for client c's diagnostic on the boundary.
local function survivor_of(c)
  local ns = vim.lsp.diagnostic.get_namespace(c.id)
  return wait(RUN_MS, function()
    for _, d in ipairs(vim.diagnostic.get(vim.fn.bufnr(file), { namespace = ns })) do
      if d.source == 'bcode' and d.lnum == boundary_line - 1 then return d end
    end
  end, 'client ' .. c.id .. "'s diagnostic on the boundary")
end

-- health asks the server bcode/health, as :checkhealth does.
local function health(c)
  local resp = c.request_sync('bcode/health', vim.empty_dict(), 20000, vim.fn.bufnr(file))
  ok(resp and resp.result, 'bcode/health answered: ' .. vim.inspect(resp))
  return resp.result
end

local function messages_like(pattern)
  local out = {}
  for _, m in ipairs(h.all_messages) do
    if m.msg:find(pattern) then out[#out + 1] = m end
  end
  return out
end

-- statusline_if_alone is the statusline when token is the only progress
-- running (a run the disk watcher starts meanwhile would share it), else
-- want itself, so the check does not depend on that run's timing.
local function statusline_if_alone(token, want, buf)
  for t in pairs(lsp.progress) do
    if t ~= token then return want end
  end
  return require('bcode').statusline(buf)
end

local first -- the first client

return {
  { 'the buffer attaches and evidence on open shows the survivor', function()
    vim.cmd('filetype on')
    require('bcode').setup({ cmd = { h.env('BCODE_LS'), '--stdio', '--debounce', '100ms' } })
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
    first = wait(30000, attached_client, 'bcode-ls to attach')
    eq(repo, first.config.root_dir, 'root')
    survivor_of(first)
  end },

  { 'progress ends at its end; a report after it does not bring it back', function()
    local buf = vim.fn.bufnr(file)
    wait(RUN_MS, function() return next(lsp.progress) == nil end, 'the run at start to end')
    local progress = first.config.handlers['$/progress']
    local ctx = { client_id = first.id, method = '$/progress' }
    progress(nil, { token = 'bcode-test-0', value = { kind = 'begin', title = 'bcode task t-1' } }, ctx, {})
    eq('bcode task t-1', lsp.progress['bcode-test-0'].title, 'begin')
    eq('bcode: task t-1', statusline_if_alone('bcode-test-0', 'bcode: task t-1', buf), 'the statusline says bcode once')
    progress(nil, { token = 'bcode-test-0', value = { kind = 'end', message = 'done' } }, ctx, {})
    progress(nil, { token = 'bcode-test-0', value = { kind = 'report', message = 'late' } }, ctx, {})
    eq(nil, lsp.progress['bcode-test-0'], 'ended')
    if next(lsp.progress) == nil then
      eq('bcode: 1 mutant survives', require('bcode').statusline(buf), 'the statusline after the end')
    end
  end },

  { ':checkhealth bcode from the user\'s buffer checks its client', function()
    vim.cmd('checkhealth bcode')
    local report = h.buf_text(0)
    ok(vim.api.nvim_buf_get_name(0) ~= file, 'the health buffer is current while it runs')
    match(report, 'OK:? bcode%-ls found: ' .. vim.pesc(h.env('BCODE_LS')), 'the server\'s path')
    match(report, 'OK:? your buffer [^\n]*quota/quota%.go is attached to bcode%-ls %(client ' .. first.id .. '%)', 'the user\'s buffer, not the health buffer')
    match(report, 'OK:? bcode%-ls is running for ' .. vim.pesc(repo) .. ' %(client ' .. first.id .. '%)', 'the client')
    match(report, 'OK:? initialized: bcode%-ls %d+%.%d+%.%d+', 'initialized, with the version from serverInfo')
    match(report, 'OK:? root directory: ' .. vim.pesc(repo), 'the real root')
    match(report, 'bcode%-ls %d+%.%d+%.%d+, pid %d+, serving ' .. vim.pesc(repo), 'what the server says of itself')
    ok(report:find('OK:? Docker is reachable: Docker ') or report:find('WARN[A-Z]*:? Docker is not reachable: '), 'Docker, either way:\n' .. report)
    ok(report:find('OK:? model server: ') or report:find('WARN[A-Z]*:? model server http[^ ]* is not reachable: '), 'the model server, either way:\n' .. report)
    vim.cmd('bwipeout!')
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
  end },

  { 'a killed server is one notification with its exit and last stderr lines', function()
    local pid = health(first).pid
    -- Work in progress when it dies (as bcode-ls reports it: begin, report)
    -- must not stay in the statusline.
    local buf = vim.fn.bufnr(file)
    local progress = first.config.handlers['$/progress']
    local ctx = { client_id = first.id, method = '$/progress' }
    progress(nil, { token = 'bcode-test-1', value = { kind = 'begin', title = 'bcode evidence', cancellable = true } }, ctx, {})
    progress(nil, { token = 'bcode-test-1', value = { kind = 'report', message = 'running 6 mutants', percentage = 40 } }, ctx, {})
    eq('bcode: evidence 40% running 6 mutants', statusline_if_alone('bcode-test-1', 'bcode: evidence 40% running 6 mutants', buf), 'the statusline during work')
    -- Something the server says on stderr now, at INFO: a cancel for a
    -- progress it does not run. Its own line is then among the last.
    first.notify('window/workDoneProgress/cancel', { token = 'bcode-test-marker' })
    wait(20000, function()
      for _, l in ipairs(lsp.stderr_lines()) do
        if l:find('bcode%-test%-marker') then return true end
      end
    end, 'the server to log the marker on stderr')
    ok(vim.loop.kill(pid, 9) == 0, 'kill -9 ' .. pid)
    local m = wait(20000, function() return h.take_message('^bcode: bcode%-ls for .* was killed by signal 9') end, 'the notification')
    match(m.msg, '^bcode: bcode%-ls for ' .. vim.pesc(repo) .. ' was killed by signal 9 %(SIGKILL%); the last lines of its stderr:\n', 'what happened')
    match(m.msg, '\n  time=[^\n]* level=INFO msg="cancel for a progress that is not running" token=bcode%-test%-marker\n', 'the server\'s own stderr line, as it wrote it')
    match(m.msg, ':BcodeRestart starts it again%.$', 'what to do')
    eq(vim.log.levels.ERROR, m.level, 'level')
    wait(10000, function() return lsp.client(vim.fn.bufnr(file)) == nil end, 'the client to be gone')
    -- Once: nothing more is said of it.
    vim.wait(1000)
    eq(1, #messages_like('was killed by signal'), 'one notification')
    eq('', require('bcode').statusline(buf), 'the statusline shows nothing of a dead server')
    eq(nil, next(lsp.progress), 'its progress ended with it')
  end },

  { ':BcodeRestart starts it again on the same root and diagnostics come back', function()
    vim.cmd('BcodeRestart')
    local m = wait(30000, function() return h.take_message('^bcode: started bcode%-ls for ') end, 'the restart message')
    eq('bcode: started bcode-ls for ' .. repo .. ' (1 buffer attached)', m.msg, 'after a crash nothing was running: it is started')
    local second = wait(30000, attached_client, 'the new client')
    ok(second.id ~= first.id, 'a new client')
    eq(repo, second.config.root_dir, 'the same root')
    survivor_of(second)
    first = second
  end },

  { ':BcodeRestart of a running server says nothing of its exit', function()
    local pid = health(first).pid
    vim.cmd('BcodeRestart')
    local m = wait(30000, function() return h.take_message('^bcode: restarted bcode%-ls for ') end, 'the restart message')
    eq('bcode: restarted bcode-ls for ' .. repo .. ' (1 buffer attached)', m.msg, 'the message')
    local third = wait(30000, attached_client, 'the new client')
    ok(third.id ~= first.id, 'a new client')
    ok(health(third).pid ~= pid, 'a new process')
    survivor_of(third)
    eq(1, #messages_like('bcode%-ls for .* was killed'), 'no notification for the stop :BcodeRestart asked for')
    eq(0, #messages_like('bcode%-ls for .* exited'), 'no exit notification')
    first = third
  end },

  { 'a stop the user asks for is no news; :BcodeRestart then starts it', function()
    vim.lsp.stop_client(first.id)
    wait(20000, function() return vim.lsp.get_client_by_id(first.id) == nil end, 'the client to stop')
    vim.wait(1000)
    eq(0, #messages_like('bcode%-ls for .* exited'), 'no notification for a stop the user asked for')
    eq(1, #messages_like('bcode%-ls for .* was killed'), 'still the one of the kill')
    vim.cmd('BcodeRestart')
    wait(30000, function() return h.take_message('^bcode: started bcode%-ls for ') end, 'the start message')
    wait(30000, attached_client, 'the new client')
  end },

  { 'a server that dies at start says why: its first stderr line too', function()
    local cfg = require('bcode.config').options
    local cmd = cfg.cmd
    cfg.cmd = { cmd[1], '--stdio', '--no-such-flag' }
    vim.cmd('BcodeRestart')
    local m = wait(30000, function() return h.take_message('^bcode: bcode%-ls for .* exited with code 2') end, 'the exit notification')
    match(m.msg, 'flag provided but not defined: %-no%-such%-flag', 'the reason, first in its stderr')
    match(m.msg, 'usage: bcode%-ls', 'its usage')
    cfg.cmd = cmd
    vim.cmd('BcodeRestart')
    wait(30000, function() return h.take_message('^bcode: started bcode%-ls for ') end, 'the start with the right command')
    wait(30000, attached_client, 'the new client')
  end },

  { 'every message says "bcode: " once, at its start', function()
    ok(h.one_prefix() >= 4, 'messages were said: ' .. vim.inspect(h.all_messages))
  end },
}
