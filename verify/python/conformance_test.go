package python

import (
	"testing"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/adaptertest"
)

// TestConformance runs the language-adapter conformance suite against the
// pytest adapter with Python fixtures.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Language{
		Adapter:  New(""),
		Runner:   runner,
		Require:  needPytest,
		Foreign:  "cmd/main.go",
		Outcomes: pyOutcomes,
		Change:   pyChange,
		Suite: adaptertest.Suite{
			Passing: map[string]string{"calc.py": calcPy, "test_calc.py": pyPassingTest},
			Failing: map[string]string{"calc.py": calcPy, "test_calc.py": pyFailingTest},
		},
	})
}

func conformanceTest(file, name string) verify.Test {
	return verify.Test{Language: "python", Package: file, File: file, Name: name}
}

const calcPy = "def add(a, b):\n    return a + b\n"

const pyPassingTest = `from calc import add


def test_add():
    assert add(1, 2) == 3
`

const pyFailingTest = `from calc import add


def test_add():
    assert add(2, 2) == 5
`

var pyOutcomes = adaptertest.Outcomes{
	Files: map[string]string{
		"calc.py": calcPy + "\n\ndef parse(s):\n    raise ValueError(\"cannot parse \" + s)\n",
		"test_calc.py": `import pytest

from calc import add, parse


def test_pass():
    assert add(1, 2) == 3


def test_assert():
    assert add(2, 2) == 5


def test_raises():
    parse("x")


def test_skipped():
    pytest.skip("not on this machine")


@pytest.mark.parametrize("a,b,want", [(1, 1, 2), (1, 1, 3)])
def test_table(a, b, want):
    assert add(a, b) == want
`,
		"test_broken.py": `from calc import new


def test_new():
    assert new() == 2
`,
		"test_slow.py": `import time


def test_slow():
    time.sleep(600)
`,
	},
	Pass:          conformanceTest("test_calc.py", "test_pass"),
	Fail:          conformanceTest("test_calc.py", "test_assert"),
	FailText:      "assert 4 == 5",
	Panic:         conformanceTest("test_calc.py", "test_raises"),
	PanicText:     "cannot parse x",
	Skip:          conformanceTest("test_calc.py", "test_skipped"),
	Param:         conformanceTest("test_calc.py", "test_table"),
	ParamPass:     conformanceTest("test_calc.py", "test_table[1-1-2]"),
	ParamFail:     conformanceTest("test_calc.py", "test_table[1-1-3]"),
	Missing:       conformanceTest("test_calc.py", "test_missing"),
	Broken:        conformanceTest("test_broken.py", "test_new"),
	BrokenOutcome: verify.ImportError,
	BrokenText:    "new",
	Slow:          conformanceTest("test_slow.py", "test_slow"),
	Unit:          "test_calc.py",
	// The gate asks RunTests for functions, as ChangedTests lists them;
	// rows have IDs of their own in RunSuite's Results.
	RowsFold: true,
}

var pyChange = adaptertest.Change{
	Base: map[string]string{
		"calc.py":           calcPy,
		"tests/__init__.py": "",
		"tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef pair():\n    return (1, 2)\n",
		"tests/test_calc.py": `from calc import add


def test_moved():
    assert add(0, 0) == 0


def test_keep():
    assert add(1, 1) == 2


def test_modified():
    assert add(1, 2) == 3
`,
		"tests/test_more.py": `from calc import add


def test_deleted():
    assert add(2, 2) == 4


def test_skipped():
    assert add(3, 3) == 6
`,
		"tests/test_untouched.py": `from calc import add


def test_untouched():
    assert add(5, 5) == 10
`,
	},
	Head: map[string]string{
		"calc.py":           "def add(a, b):\n    \"\"\"Return a+b.\"\"\"\n    return b + a\n",
		"tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef pair():\n    return (2, 1)\n",
		"tests/test_calc.py": `from calc import add


def test_keep():
    assert add(1, 1) == 2


def test_modified():
    assert add(1, 2) == 3 and add(2, 1) == 3


def test_moved():
    assert add(0, 0) == 0
`,
		"tests/test_more.py": `import pytest

from calc import add


@pytest.mark.skip(reason="flaky")
def test_skipped():
    assert add(3, 3) == 6
`,
		"tests/test_added.py": `from calc import add


def test_added():
    assert add(-1, 1) == 0
`,
	},
	Added:     conformanceTest("tests/test_added.py", "test_added"),
	Modified:  conformanceTest("tests/test_calc.py", "test_modified"),
	Moved:     conformanceTest("tests/test_calc.py", "test_moved"),
	Unchanged: conformanceTest("tests/test_calc.py", "test_keep"),
	Deleted:   conformanceTest("tests/test_more.py", "test_deleted"),
	Skipped:   conformanceTest("tests/test_more.py", "test_skipped"),
	Untouched: []string{"tests/test_untouched.py", "tests/test_calc.py", "tests/test_added.py"},
	Source:    "calc.py",
	Target:    "tests/test_calc.py",
	Support:   "tests/conftest.py",
	Unit:      "tests/test_calc.py",
}
