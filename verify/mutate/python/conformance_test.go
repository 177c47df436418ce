package python

import (
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// conformance is the suite's Python fixture: small's boundary no test
// pins, big's that test_big_boundary pins, halve's loop that never ends
// when its condition admits 0, and guard, which kills its own test process
// when its condition flips.
var conformance = mutatetest.Fixture{
	Base: `
-- setup.cfg --
[tool:pytest]
testpaths = tests
-- pkg/__init__.py --
-- pkg/calc.py --
def old(n):
    return n > 3
-- tests/__init__.py --
-- tests/test_calc.py --
from pkg import calc


def test_old():
    assert calc.old(4) and not calc.old(3)
`,
	Head: `
-- pkg/calc.py --
import os
import signal


def old(n):
    return n > 3


def halve(x):
    n = 0
    while x > 0:  # loop
        x //= 2
        n += 1
    return n


def small(n):
    return n < 10  # survivor


def big(n):
    return n > 100  # killed


def guard(n):
    if n < 0:  # crash
        os.kill(os.getpid(), signal.SIGKILL)
    return n
-- tests/test_calc.py --
from pkg import calc


def test_old():
    assert calc.old(4) and not calc.old(3)


def test_halve():
    assert calc.halve(8) == 4


def test_small():
    assert calc.small(3) and not calc.small(20)


def test_big_boundary():
    assert not calc.big(100) and calc.big(101)


def test_guard():
    assert calc.guard(5) == 5
`,
	Options:   mutate.Options{Python: "/usr/bin/python3"},
	Require:   func(t *testing.T) { testenv.SystemPytest(t) },
	Unchanged: mutatetest.Site{File: "pkg/calc.py", Line: "return n > 3"},
	Survivor:  mutatetest.Site{File: "pkg/calc.py", Line: "# survivor", Mutated: "n <= 10"},
	Covering:  []string{"tests/test_calc.py::test_small"},
	Killed:    mutatetest.Site{File: "pkg/calc.py", Line: "# killed", Mutated: "n >= 100"},
	Killer:    verify.Test{Language: "python", Package: "tests/test_calc.py", File: "tests/test_calc.py", Name: "test_big_boundary"},
	Loop:      mutatetest.Site{File: "pkg/calc.py", Line: "# loop", Mutated: "x >= 0"},
	Crash:     mutatetest.Site{File: "pkg/calc.py", Line: "# crash", Mutated: "n >= 0"},
}

func TestConformance(t *testing.T) {
	mutatetest.Run(t, New(), conformance)
}
