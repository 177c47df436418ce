// The verification level and the pinned oracle in the Tasks view: the
// check node's description, its rows, the events document's table, and
// the not_reproducible status.
const test = require('node:test');
const assert = require('node:assert');
const { checkSummary, checkRows, checkTable, testOutcome } = require('../out/src/checkReport');
const { statusIcon, actionsFor, describe } = require('../out/src/tasksModel');

const missed = {
  verdict: 'green', level: 'V2', level_required: 'V3', level_missing: 'V3: 1 test(s) or unit(s) do not pass on the head: ./other.TestBroken',
  oracle: ['go:./calc:TestAbs'],
  reasons: [{ code: 'level_not_reached', message: "reached V2, the base's verify.level asks for V3" }],
  tests: [{ name: 'TestAbs', package: './calc', base_outcome: 'fail', head_outcome: 'pass', credited: true, oracle: true }],
};

test('the check says the level reached and what is missing', () => {
  assert.deepEqual(checkSummary('green', missed), { label: 'Check: green', description: 'level V2 of V3 · 1 test' });
  const rows = checkRows(missed);
  const level = rows.find((r) => r.label.startsWith('Level '));
  assert.equal(level.label, 'Level V2 reached, V3 required');
  assert.match(level.description, /^missing for V3: .*TestBroken/);
  assert.equal(level.icon.id, 'warning', 'below the asked level is a warning');
  assert.match(level.tooltip, /oracle: go:\.\/calc:TestAbs/);
  assert.equal(testOutcome(missed.tests[0]), 'base fail → head pass · credited · oracle');
  const table = checkTable('green', missed).join('\n');
  assert.match(table, /level V2 reached, V3 required; missing for V3/);
  assert.match(table, /oracle: go:\.\/calc:TestAbs/);
  const reached = checkRows({ verdict: 'verified', level: 'V3', level_required: 'V2', tests: [] }).find((r) => r.label.startsWith('Level '));
  assert.equal(reached.icon.id, 'pass');
  assert.equal(reached.description, '');
});

test('not_reproducible is a settled status that says why', () => {
  assert.equal(statusIcon('not_reproducible').id, 'debug-disconnect');
  assert.deepEqual(actionsFor('not_reproducible'), { accept: false, reject: true, resume: false, cancel: false });
  const row = describe({ id: 'a', goal: 'Make the failing test pass', status: 'not_reproducible', reason: 'nothing to fix: go:./calc:TestAbs passed on the base in all 3 runs', branch: 'bcode/a', updatedAt: '' });
  assert.match(row.description, /^not_reproducible · nothing to fix/);
});

test('the oracle row names the pinned tests, or the command still to reproduce', () => {
  const { oracleText } = require('../out/src/checkReport');
  const pinned = oracleText({ command: "go test ./calc -run '^TestAbs$'", tests: [{ language: 'go', package: './calc', name: 'TestAbs' }], files: [{ path: 'calc/calc_test.go', sha256: 'ab'.repeat(32) }] });
  assert.equal(pinned.text, 'Oracle: ./calc:TestAbs');
  assert.equal(pinned.tooltip, "reproduce: go test ./calc -run '^TestAbs$'\ncalc/calc_test.go (sha256 abababababab)");
  assert.equal(oracleText({ command: 'pytest tests/t.py::test_x', tests: null }).text, 'Oracle: not pinned yet (pytest tests/t.py::test_x)');
});
