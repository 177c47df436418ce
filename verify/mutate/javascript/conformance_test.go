package javascript

import (
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// conformance is the suite's JavaScript fixture: small's boundary no test
// pins, big's that "calc › big boundary" pins, halve's loop that never
// ends when its condition admits 0, and guard, which ends its own test
// process when its condition flips.
var conformance = mutatetest.Fixture{
	Base: `
-- calc.js --
function old(n) {
  return n > 3;
}

module.exports = { old };
-- test/calc.test.js --
const { describe, it } = require('node:test');
const assert = require('node:assert');
const calc = require('../calc.js');

describe('calc', () => {
  it('old', () => {
    assert.ok(calc.old(4) && !calc.old(3));
  });
});
`,
	Head: `
-- calc.js --
function old(n) {
  return n > 3;
}

function halve(x) {
  let n = 0;
  while (x > 0) { // loop
    x >>= 1;
    n++;
  }
  return n;
}

function small(n) {
  return n < 10; // survivor
}

function big(n) {
  return n > 100; // killed
}

function guard(n) {
  if (n < 0) { // crash
    process.exit(1);
  }
  return n;
}

module.exports = { old, halve, small, big, guard };
-- test/calc.test.js --
const { describe, it } = require('node:test');
const assert = require('node:assert');
const calc = require('../calc.js');

describe('calc', () => {
  it('old', () => {
    assert.ok(calc.old(4) && !calc.old(3));
  });
  it('halve', () => {
    assert.strictEqual(calc.halve(8), 4);
  });
  it('small', () => {
    assert.ok(calc.small(3) && !calc.small(20));
  });
  it('big boundary', () => {
    assert.ok(!calc.big(100) && calc.big(101));
  });
  it('guard', () => {
    assert.strictEqual(calc.guard(5), 5);
  });
});
`,
	Require:   func(t *testing.T) { testenv.Node(t) },
	Unchanged: mutatetest.Site{File: "calc.js", Line: "return n > 3;"},
	Survivor:  mutatetest.Site{File: "calc.js", Line: "// survivor", Mutated: "<="},
	Covering:  []string{"test/calc.test.js::calc › small"},
	Killed:    mutatetest.Site{File: "calc.js", Line: "// killed", Mutated: ">="},
	Killer:    verify.Test{Language: "javascript", Package: "test/calc.test.js", File: "test/calc.test.js", Name: "calc › big boundary"},
	Loop:      mutatetest.Site{File: "calc.js", Line: "// loop", Mutated: ">="},
	Crash:     mutatetest.Site{File: "calc.js", Line: "// crash", Mutated: ">="},
}

func TestConformance(t *testing.T) {
	mutatetest.Run(t, New(), conformance)
}
