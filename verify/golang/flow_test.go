package golang

import (
	"context"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// TestFailBeforePassAfter runs the adapter the way the gate does: find the
// changed tests, run them on the base with the head's test files laid
// over it, then on the head. A fix with a new assertion fails on the base
// by assertion; a test of a function the change adds does not build there.
func TestFailBeforePassAfter(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	a := New()
	ctx := context.Background()

	baseCode := "package calc\n\nfunc Abs(x int) int { return x }\n"
	headCode := "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n\nfunc Sign(x int) int {\n\tif x < 0 {\n\t\treturn -1\n\t}\n\treturn 1\n}\n"
	baseTest := "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(2) != 2 {\n\t\tt.Fatal(\"Abs(2)\")\n\t}\n}\n"
	headTest := baseTest + "\nfunc TestAbsNegative(t *testing.T) {\n\tif got := Abs(-3); got != 3 {\n\t\tt.Fatalf(\"Abs(-3) = %d, want 3\", got)\n\t}\n}\n" +
		"\n// TestSign exercises a function the change adds.\nfunc TestSign(t *testing.T) {\n\tif Sign(-2) != -1 {\n\t\tt.Fatal(\"Sign\")\n\t}\n}\n"
	change := changeOf(fileChange("calc/calc.go", baseCode, headCode), fileChange("calc/calc_test.go", baseTest, headTest))

	tests, err := a.ChangedTests(ctx, change)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tests); !equalStrings(got, []string{"./calc:TestAbsNegative", "./calc:TestSign"}) {
		t.Fatalf("changed tests %v", got)
	}

	// The base with the head's test file over it, and the head.
	baseDir := writeTree(t, map[string]string{"go.mod": goMod, "calc/calc.go": baseCode, "calc/calc_test.go": headTest})
	headDir := writeTree(t, map[string]string{"go.mod": goMod, "calc/calc.go": headCode, "calc/calc_test.go": headTest})
	opts := verify.RunOptions{Count: 1, Timeout: time.Minute}

	// TestAbsNegative alone fails by assertion on the base; with TestSign
	// in the same package nothing builds there.
	alone, err := a.RunTests(ctx, r, writeTree(t, map[string]string{
		"go.mod": goMod, "calc/calc.go": baseCode,
		"calc/calc_test.go": baseTest + "\nfunc TestAbsNegative(t *testing.T) {\n\tif got := Abs(-3); got != 3 {\n\t\tt.Fatalf(\"Abs(-3) = %d, want 3\", got)\n\t}\n}\n",
	}), tests[:1], opts)
	if err != nil || len(alone) != 1 || alone[0].Outcome != verify.Fail {
		t.Fatalf("TestAbsNegative on the base: %+v %v", alone, err)
	}
	base, err := a.RunTests(ctx, r, baseDir, tests, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range base {
		if res.Outcome != verify.BuildError {
			t.Errorf("%s on the base: %s (%s), want build_error (Sign does not exist there)", res.Test.Name, res.Outcome, res.Detail)
		}
	}
	head, err := a.RunTests(ctx, r, headDir, tests, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range head {
		if res.Outcome != verify.Pass {
			t.Errorf("%s on the head: %s (%s)", res.Test.Name, res.Outcome, res.Detail)
		}
	}

	// The change reaches ./calc, and the head's suite passes.
	targets, err := a.Targets(ctx, r, headDir, change)
	if err != nil || len(targets) != 1 || targets[0] != "./calc" {
		t.Fatalf("targets %v %v", targets, err)
	}
	suite, err := a.RunSuite(ctx, r, headDir, targets, time.Minute)
	if err != nil || suite.Outcome != verify.Pass {
		t.Fatalf("suite %+v %v", suite, err)
	}
}
