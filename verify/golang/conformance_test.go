package golang

import (
	"testing"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/adaptertest"
)

// TestConformance runs the language-adapter conformance suite against the
// Go adapter with Go fixtures.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Language{
		Adapter:  New(),
		Runner:   newRunner(t),
		Require:  needGo,
		Foreign:  "tools/gen.py",
		Outcomes: goOutcomes,
		Change:   goChange,
		Suite: adaptertest.Suite{
			Passing: map[string]string{"go.mod": goMod, "calc/calc.go": calcGo, "calc/calc_test.go": passingTest},
			Failing: map[string]string{"go.mod": goMod, "calc/calc.go": calcGo, "calc/calc_test.go": failingTest},
		},
	})
}

func goTest(pkg, file, name string) verify.Test {
	return verify.Test{Language: "go", Package: pkg, File: file, Name: name}
}

const calcGo = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"

const passingTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("1+2")
	}
}
`

const failingTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 5 {
		t.Fatalf("Add(2, 2) = %d, want 5", got)
	}
}
`

var goOutcomes = adaptertest.Outcomes{
	Files: map[string]string{
		"go.mod":       goMod,
		"calc/calc.go": calcGo,
		"calc/calc_test.go": `package calc

import "testing"

func TestPass(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("1+2")
	}
}

func TestAssert(t *testing.T) {
	if got := Add(2, 2); got != 5 {
		t.Fatalf("Add(2, 2) = %d, want 5", got)
	}
}

func TestSkipped(t *testing.T) { t.Skip("not on this machine") }

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b int
		want int
	}{{"one plus one", 1, 1, 2}, {"wrong", 1, 1, 3}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Add(c.a, c.b); got != c.want {
				t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
			}
		})
	}
}
`,
		// Last: a panic ends the test binary, and the tests after it
		// would not run in a suite run.
		"calc/panic_test.go": `package calc

import "testing"

func TestPanics(t *testing.T) {
	var m map[string]int
	m["boom"] = Add(1, 1)
}
`,
		"broken/broken.go": "package broken\n\nfunc Old() int { return 1 }\n",
		"broken/broken_test.go": `package broken

import "testing"

func TestNew(t *testing.T) {
	if New() != 2 {
		t.Fatal("New")
	}
}
`,
		"slow/slow_test.go": `package slow

import (
	"testing"
	"time"
)

func TestSlow(t *testing.T) { time.Sleep(10 * time.Minute) }
`,
	},
	Pass:          goTest("./calc", "calc/calc_test.go", "TestPass"),
	Fail:          goTest("./calc", "calc/calc_test.go", "TestAssert"),
	FailText:      "Add(2, 2) = 4, want 5",
	Panic:         goTest("./calc", "calc/panic_test.go", "TestPanics"),
	PanicText:     "assignment to entry in nil map",
	Skip:          goTest("./calc", "calc/calc_test.go", "TestSkipped"),
	Param:         goTest("./calc", "calc/calc_test.go", "TestTable"),
	ParamPass:     goTest("./calc", "calc/calc_test.go", "TestTable/one_plus_one"),
	ParamFail:     goTest("./calc", "calc/calc_test.go", "TestTable/wrong"),
	Missing:       goTest("./calc", "calc/calc_test.go", "TestMissing"),
	Broken:        goTest("./broken", "broken/broken_test.go", "TestNew"),
	BrokenOutcome: verify.BuildError,
	BrokenText:    "undefined: New",
	Slow:          goTest("./slow", "slow/slow_test.go", "TestSlow"),
	Unit:          "./calc",
}

var goChange = adaptertest.Change{
	Base: map[string]string{
		"go.mod":                  goMod,
		"calc/calc.go":            calcGo,
		"calc/testdata/cases.txt": "1 2 3\n",
		"calc/calc_test.go": `package calc

import "testing"

func TestMoved(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("0+0")
	}
}

func TestKeep(t *testing.T) {
	if Add(1, 1) != 2 {
		t.Fatal("1+1")
	}
}

func TestModified(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("1+2")
	}
}
`,
		"calc/more_test.go": `package calc

import "testing"

func TestDeleted(t *testing.T) {
	if Add(2, 2) != 4 {
		t.Fatal("2+2")
	}
}

func TestSkipped(t *testing.T) {
	if Add(3, 3) != 6 {
		t.Fatal("3+3")
	}
}
`,
		"calc/untouched_test.go": `package calc

import "testing"

func TestUntouched(t *testing.T) {
	if Add(5, 5) != 10 {
		t.Fatal("5+5")
	}
}
`,
	},
	Head: map[string]string{
		"calc/calc.go":            "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn b + a\n}\n",
		"calc/testdata/cases.txt": "1 2 3\n2 2 4\n",
		"calc/calc_test.go": `package calc

import "testing"

func TestKeep(t *testing.T) {
	if Add(1, 1) != 2 {
		t.Fatal("1+1")
	}
}

func TestModified(t *testing.T) {
	if Add(1, 2) != 3 || Add(2, 1) != 3 {
		t.Fatal("1+2")
	}
}

func TestMoved(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("0+0")
	}
}
`,
		"calc/more_test.go": `package calc

import "testing"

func TestSkipped(t *testing.T) {
	t.Skip("flaky")
	if Add(3, 3) != 6 {
		t.Fatal("3+3")
	}
}
`,
		"calc/added_test.go": `package calc

import "testing"

func TestAdded(t *testing.T) {
	if Add(-1, 1) != 0 {
		t.Fatal("-1+1")
	}
}
`,
	},
	Added:     goTest("./calc", "calc/added_test.go", "TestAdded"),
	Modified:  goTest("./calc", "calc/calc_test.go", "TestModified"),
	Moved:     goTest("./calc", "calc/calc_test.go", "TestMoved"),
	Unchanged: goTest("./calc", "calc/calc_test.go", "TestKeep"),
	Deleted:   goTest("./calc", "calc/more_test.go", "TestDeleted"),
	Skipped:   goTest("./calc", "calc/more_test.go", "TestSkipped"),
	Untouched: []string{"calc/untouched_test.go", "calc/calc_test.go", "calc/added_test.go"},
	Source:    "calc/calc.go",
	Target:    "./calc",
	Support:   "calc/testdata/cases.txt",
	Unit:      "./calc",
}
