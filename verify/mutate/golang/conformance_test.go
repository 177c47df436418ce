package golang

import (
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// conformance is the suite's Go fixture: Small's boundary no test pins,
// Big's that TestBigBoundary pins, Halve's loop that never ends when its
// condition admits 0, and Guard, which kills its own test process when its
// condition flips.
var conformance = mutatetest.Fixture{
	Base: `
-- go.mod --
module example.com/fixture

go 1.22
-- calc/calc.go --
package calc

func Old(n int) bool { return n > 3 }
-- calc/calc_test.go --
package calc

import "testing"

func TestOld(t *testing.T) {
	if !Old(4) || Old(3) {
		t.Fatal("Old")
	}
}
`,
	Head: `
-- calc/calc.go --
package calc

import (
	"os"
	"syscall"
)

func Old(n int) bool { return n > 3 }

func Halve(x int) int {
	n := 0
	for x > 0 { // loop
		x /= 2
		n++
	}
	return n
}

func Small(n int) bool {
	return n < 10 // survivor
}

func Big(n int) bool {
	return n > 100 // killed
}

func Guard(n int) int {
	if n < 0 { // crash
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return n
}
-- calc/calc_test.go --
package calc

import "testing"

func TestOld(t *testing.T) {
	if !Old(4) || Old(3) {
		t.Fatal("Old")
	}
}

func TestHalve(t *testing.T) {
	if Halve(8) != 4 {
		t.Fatal("Halve")
	}
}

func TestSmall(t *testing.T) {
	if !Small(3) || Small(20) {
		t.Fatal("Small")
	}
}

func TestBigBoundary(t *testing.T) {
	if Big(100) || !Big(101) {
		t.Fatal("Big's boundary")
	}
}

func TestGuard(t *testing.T) {
	if Guard(5) != 5 {
		t.Fatal("Guard")
	}
}
`,
	Require:   func(t *testing.T) { testenv.Go(t) },
	Unchanged: mutatetest.Site{File: "calc/calc.go", Line: "func Old"},
	Survivor:  mutatetest.Site{File: "calc/calc.go", Line: "// survivor", Mutated: "n <= 10"},
	Covering:  []string{"TestSmall"},
	Killed:    mutatetest.Site{File: "calc/calc.go", Line: "// killed", Mutated: "n >= 100"},
	Killer:    verify.Test{Language: "go", Package: "calc", Name: "TestBigBoundary"},
	Loop:      mutatetest.Site{File: "calc/calc.go", Line: "// loop", Mutated: "x >= 0"},
	Crash:     mutatetest.Site{File: "calc/calc.go", Line: "// crash", Mutated: "n >= 0"},
}

func TestConformance(t *testing.T) {
	mutatetest.Run(t, New(), conformance)
}
