package javascript

import (
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/adaptertest"
)

// needNode skips (or, with BCODE_REQUIRE_ALL=1, fails) without node.
func needNode(t *testing.T) {
	t.Helper()
	testenv.Node(t)
}

// TestConformance runs the language-adapter conformance suite against the
// node --test adapter with JavaScript fixtures.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Language{
		Adapter:  New(),
		Runner:   host.New(),
		Require:  needNode,
		Foreign:  "cmd/main.go",
		Outcomes: jsOutcomes,
		Change:   jsChange,
		Suite: adaptertest.Suite{
			Passing: map[string]string{"calc.js": calcJS, "test/calc.test.js": jsPassingTest},
			Failing: map[string]string{"calc.js": calcJS, "test/calc.test.js": jsFailingTest},
		},
	})
}

func conformanceTest(file, name string) verify.Test {
	return verify.Test{Language: "javascript", Package: file, File: file, Name: name}
}

const calcJS = "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n"

const jsPassingTest = `const { test } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test('add', () => {
  assert.strictEqual(add(1, 2), 3);
});
`

const jsFailingTest = `const { test } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test('add', () => {
  assert.strictEqual(add(2, 2), 5);
});
`

var jsOutcomes = adaptertest.Outcomes{
	Files: map[string]string{
		"calc.js": `function add(a, b) {
  return a + b;
}

function parse(s) {
  throw new Error('cannot parse ' + s);
}

module.exports = { add, parse };
`,
		"test/calc.test.js": `const { describe, it, test } = require('node:test');
const assert = require('node:assert');
const { add, parse } = require('../calc.js');

describe('calc', () => {
  it('passes', () => {
    assert.strictEqual(add(1, 2), 3);
  });

  it('asserts', () => {
    assert.strictEqual(add(2, 2), 5);
  });

  it('raises', () => {
    parse('x');
  });

  it('skips', (t) => {
    t.skip('not on this machine');
  });
});

describe('table', () => {
  for (const [a, b, want] of [[1, 1, 2], [1, 1, 3]]) {
    test(` + "`${a}+${b}=${want}`" + `, () => {
      assert.strictEqual(add(a, b), want);
    });
  }
});
`,
		"test/broken.test.js": `const { test } = require('node:test');
const { neu } = require('../missing.js');

test('new', () => {
  neu();
});
`,
		"test/slow.test.js": `const { test } = require('node:test');

test('slow', async () => {
  await new Promise((resolve) => setTimeout(resolve, 600000));
});
`,
	},
	Pass:          conformanceTest("test/calc.test.js", "calc › passes"),
	Fail:          conformanceTest("test/calc.test.js", "calc › asserts"),
	FailText:      "4 !== 5",
	Panic:         conformanceTest("test/calc.test.js", "calc › raises"),
	PanicText:     "cannot parse x",
	Skip:          conformanceTest("test/calc.test.js", "calc › skips"),
	Param:         conformanceTest("test/calc.test.js", "table"),
	ParamPass:     conformanceTest("test/calc.test.js", "table › 1+1=2"),
	ParamFail:     conformanceTest("test/calc.test.js", "table › 1+1=3"),
	Missing:       conformanceTest("test/calc.test.js", "calc › missing"),
	Broken:        conformanceTest("test/broken.test.js", "new"),
	BrokenOutcome: verify.ImportError,
	BrokenText:    "missing.js",
	Slow:          conformanceTest("test/slow.test.js", "slow"),
	Unit:          "test/calc.test.js",
}

var jsChange = adaptertest.Change{
	Base: map[string]string{
		"calc.js":          calcJS,
		"tests/helpers.js": "module.exports = { pair: () => [1, 2] };\n",
		"tests/calc.test.js": `const { describe, it } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

describe('calc', () => {
  it('moved', () => {
    assert.strictEqual(add(0, 0), 0);
  });

  it('keep', () => {
    assert.strictEqual(add(1, 1), 2);
  });

  it('modified', () => {
    assert.strictEqual(add(1, 2), 3);
  });
});
`,
		"tests/more.test.js": `const { test } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test('deleted', () => {
  assert.strictEqual(add(2, 2), 4);
});

test('skipped', () => {
  assert.strictEqual(add(3, 3), 6);
});
`,
		"tests/untouched.test.js": `const { test } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test('untouched', () => {
  assert.strictEqual(add(5, 5), 10);
});
`,
	},
	Head: map[string]string{
		"calc.js":          "function add(a, b) {\n  // Return a+b.\n  return b + a;\n}\n\nmodule.exports = { add };\n",
		"tests/helpers.js": "module.exports = { pair: () => [2, 1] };\n",
		"tests/calc.test.js": `const { describe, it } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

describe('calc', () => {
  it('keep', () => {
    assert.strictEqual(add(1, 1), 2);
  });

  it('modified', () => {
    assert.strictEqual(add(1, 2), 3);
    assert.strictEqual(add(2, 1), 3);
  });

  it('moved',   () => {
    assert.strictEqual(add(0, 0), 0);
  });
});
`,
		"tests/more.test.js": `const { test } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test.skip('skipped', () => {
  assert.strictEqual(add(3, 3), 6);
});
`,
		"tests/added.test.js": `const { test } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test('added', () => {
  assert.strictEqual(add(-1, 1), 0);
});
`,
	},
	Added:     conformanceTest("tests/added.test.js", "added"),
	Modified:  conformanceTest("tests/calc.test.js", "calc › modified"),
	Moved:     conformanceTest("tests/calc.test.js", "calc › moved"),
	Unchanged: conformanceTest("tests/calc.test.js", "calc › keep"),
	Deleted:   conformanceTest("tests/more.test.js", "deleted"),
	Skipped:   conformanceTest("tests/more.test.js", "skipped"),
	Untouched: []string{"tests/untouched.test.js", "tests/calc.test.js", "tests/added.test.js"},
	Source:    "calc.js",
	Target:    "tests/calc.test.js",
	Support:   "tests/helpers.js",
	Unit:      "tests/calc.test.js",
}
