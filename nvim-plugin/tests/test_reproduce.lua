-- The task's reproduction and verification level in the events split,
-- and what the end of a not_reproducible run offers.
local h = require('helpers')
local eq = h.eq
local tasks = require('bcode.tasks')

return {
  { 'the detail shows the oracle and the level reached', function()
    local d = {
      oracle = { command = "go test ./calc -run '^TestAbs$'", tests = { { language = 'go', package = './calc', name = 'TestAbs' } } },
      verification = { verdict = 'green', report = { verdict = 'green', level = 'V2', level_required = 'V3', level_missing = 'V3: ./other.TestBroken fails' } },
    }
    eq({
      "reproduce go test ./calc -run '^TestAbs$'",
      'oracle go:./calc:TestAbs',
      'level V2 reached, V3 required; missing for V3: ./other.TestBroken fails',
    }, tasks.verification_lines(d))
  end },
  { 'an oracle not pinned yet, no check yet', function()
    eq({ 'reproduce pytest tests/t.py::test_x', 'oracle not pinned yet: the run reproduces it on the base first' },
      tasks.verification_lines({ oracle = { command = 'pytest tests/t.py::test_x', tests = vim.NIL }, verification = vim.NIL }))
    eq({}, tasks.verification_lines({}))
  end },
  { 'a not_reproducible end offers only reject', function()
    eq({ 'Reject' }, tasks.end_choices({ status = 'not_reproducible' }))
    eq({ 'Diff', 'Accept', 'Reject' }, tasks.end_choices({ status = 'verified' }))
  end },
}
