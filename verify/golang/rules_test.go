package golang

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

// gateCase is one change run through the whole gate with this adapter on
// real go test: base and head trees, the verdict, and a reason or finding
// code the report must carry.
type gateCase struct {
	base, head map[string]string
	want       verify.Verdict
	code       string
	credited   []string // test IDs that must be credited ("Name" as go test names them)
	adapter    *Adapter
	flakeRuns  int
}

func runGateCase(t *testing.T, c gateCase) *verify.Report {
	t.Helper()
	r := newRunner(t)
	var files []verify.FileChange
	paths := map[string]bool{}
	for p := range c.base {
		paths[p] = true
	}
	for p := range c.head {
		paths[p] = true
	}
	var sorted []string
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		if c.base[p] != c.head[p] {
			files = append(files, fileChange(p, c.base[p], c.head[p]))
		}
	}
	change := changeOf(files...)
	change.Workspace = treeWorkspace{t: t, base: c.base, head: c.head}
	a := c.adapter
	if a == nil {
		a = New()
	}
	cfg := config.Default()
	if c.flakeRuns > 0 {
		cfg.Gate.FlakeRuns = c.flakeRuns
	}
	g := &verify.Gate{Runner: r, Adapters: []verify.Adapter{a}}
	rep, err := g.Check(context.Background(), change, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != c.want {
		t.Fatalf("verdict %s, want %s\nreasons %+v\ntamper %+v\ntests %+v\np2p %+v\nchanged %+v", rep.Verdict, c.want, rep.Reasons, rep.Tamper, rep.Tests, rep.PassToPass, rep.ChangedExpectations)
	}
	if c.code != "" && !reportHas(rep, c.code) {
		t.Fatalf("report has no %s: reasons %+v tamper %+v changed %+v", c.code, rep.Reasons, rep.Tamper, rep.ChangedExpectations)
	}
	got := map[string]bool{}
	for _, tr := range rep.Credited() {
		got[tr.Name] = true
	}
	for _, n := range c.credited {
		if !got[n] {
			t.Fatalf("%s not credited; credited %v; tests %+v", n, keys(got), rep.Tests)
		}
	}
	return rep
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func reportHas(rep *verify.Report, code string) bool {
	for _, r := range rep.Reasons {
		if r.Code == code {
			return true
		}
	}
	for _, f := range rep.Tamper {
		if f.Code == code {
			return true
		}
	}
	for _, f := range rep.ChangedExpectations {
		if f.Code == code {
			return true
		}
	}
	return false
}

const absBuggy = "package calc\n\nfunc Abs(x int) int { return x }\n"
const absFixed = "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n"

// tableTest is a test whose rows live in a helper file, outside any test
// function: a change that adds rows changes no test body.
const tableTest = "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tfor _, c := range absCases {\n\t\tt.Run(c.name, func(t *testing.T) {\n\t\t\tif got := Abs(c.in); got != c.want {\n\t\t\t\tt.Fatalf(\"Abs(%d) = %d, want %d\", c.in, got, c.want)\n\t\t\t}\n\t\t})\n\t}\n}\n"

func absCases(rows ...string) string {
	return "package calc\n\nvar absCases = []struct {\n\tname     string\n\tin, want int\n}{\n" + strings.Join(rows, "") + "}\n"
}

// TestGateCreditsRowsAddedOutsideTheTestFunction: the rows of a table test
// live in a helper file; the new row's subtest fails on the base with the
// head's helper laid over it and passes on the head. Credit goes to the
// subtest ID, found at run time, not by comparing function bodies.
func TestGateCreditsRowsAddedOutsideTheTestFunction(t *testing.T) {
	t.Parallel()
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": tableTest,
		"calc/cases_test.go": absCases("\t{\"positive\", 2, 2},\n")}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": tableTest,
		"calc/cases_test.go": absCases("\t{\"positive\", 2, 2},\n", "\t{\"negative\", -3, 3},\n")}
	rep := runGateCase(t, gateCase{base: base, head: head, want: verify.Verified, credited: []string{"TestAbs/negative"}})
	for _, tr := range rep.Tests {
		if tr.Name == "TestAbs/positive" {
			t.Fatalf("a row that passes on both sides is listed: %+v", tr)
		}
	}
}

// TestGateHelperSkipIsTampering: the change breaks Abs and makes a shared
// helper call t.Skip. No test body mentions Skip; at run time a test that
// passed on the base is skipped on the head.
func TestGateHelperSkipIsTampering(t *testing.T) {
	t.Parallel()
	test := "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tcheck(t, Abs(-2), 2)\n}\n"
	helper := "package calc\n\nimport \"testing\"\n\nfunc check(t *testing.T, got, want int) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Fatalf(\"got %d, want %d\", got, want)\n\t}\n}\n"
	lax := "package calc\n\nimport \"testing\"\n\nfunc check(t *testing.T, got, want int) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Skip(\"flaky on some platforms\")\n\t}\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test, "calc/helper_test.go": helper}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": test, "calc/helper_test.go": lax}
	runGateCase(t, gateCase{base: base, head: head, want: verify.Tampered, code: verify.FindingTestVanished})
}

// TestGateTestMainExitZeroIsNotAPass: a TestMain that calls m.Run and then
// os.Exit(0) makes go test report the package ok; the test events still say
// the test failed. The failure counts, and a package result that
// contradicts its own test events is tampering.
func TestGateTestMainExitZeroIsNotAPass(t *testing.T) {
	t.Parallel()
	test := "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(-2) != 2 {\n\t\tt.Fatal(Abs(-2))\n\t}\n}\n"
	main := "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tm.Run()\n\tos.Exit(0)\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": test, "calc/main_test.go": main}
	rep := runGateCase(t, gateCase{base: base, head: head, want: verify.Tampered, code: verify.FindingReportAltered})
	if rep.PassToPass == nil || len(rep.PassToPass.Failed) == 0 {
		t.Fatalf("the swallowed failure is not counted as a pass-to-pass failure: %+v", rep.PassToPass)
	}
}

// TestGateLaxTestOnlyPackage: an internal assertion package (it imports
// "testing" and only tests import it) is made lax while the fix is dropped.
// The base's strict helper, run against the head, fails the test: changed
// expectations, and the lax helper earns nothing on the base.
func TestGateLaxTestOnlyPackage(t *testing.T) {
	t.Parallel()
	strict := "package check\n\nimport \"testing\"\n\nfunc Equal(t testing.TB, got, want int) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Fatalf(\"got %d, want %d\", got, want)\n\t}\n}\n"
	lax := "package check\n\nimport \"testing\"\n\nfunc Equal(t testing.TB, got, want int) {\n\tt.Helper()\n}\n"
	test := "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/internal/check\"\n)\n\nfunc TestAbs(t *testing.T) {\n\tcheck.Equal(t, Abs(-2), 2)\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test, "internal/check/check.go": strict}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": test, "internal/check/check.go": lax}
	runGateCase(t, gateCase{base: base, head: head, want: verify.Tampered, code: verify.FindingChangedExpectations})
}

// TestGateFixThroughTestOnlyPackage: a strict assertion package gains a
// check along with the fix; the package's importers' tests are the
// candidates, and the base with the head's helper laid over it fails.
func TestGateFixThroughTestOnlyPackage(t *testing.T) {
	t.Parallel()
	weak := "package check\n\nimport \"testing\"\n\nfunc AbsOK(t testing.TB, f func(int) int) {\n\tt.Helper()\n\tif f(2) != 2 {\n\t\tt.Fatal(\"Abs(2)\")\n\t}\n}\n"
	strong := "package check\n\nimport \"testing\"\n\nfunc AbsOK(t testing.TB, f func(int) int) {\n\tt.Helper()\n\tif f(2) != 2 {\n\t\tt.Fatal(\"Abs(2)\")\n\t}\n\tif f(-2) != 2 {\n\t\tt.Fatal(\"Abs(-2)\")\n\t}\n}\n"
	test := "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/internal/check\"\n)\n\nfunc TestAbs(t *testing.T) {\n\tcheck.AbsOK(t, Abs)\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": test, "internal/check/check.go": weak}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test, "internal/check/check.go": strong}
	runGateCase(t, gateCase{base: base, head: head, want: verify.Verified, credited: []string{"TestAbs"}})
}

// TestGateSkipListInTestdata: a data-driven skip list gains an entry for a
// row the change breaks: the row passed on the base and is skipped on the
// head.
func TestGateSkipListInTestdata(t *testing.T) {
	t.Parallel()
	test := "package calc\n\nimport (\n\t\"os\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestAbs(t *testing.T) {\n\tskip, _ := os.ReadFile(\"testdata/skip.txt\")\n\tfor _, c := range []struct {\n\t\tname     string\n\t\tin, want int\n\t}{{\"positive\", 2, 2}, {\"negative\", -2, 2}} {\n\t\tt.Run(c.name, func(t *testing.T) {\n\t\t\tif strings.Contains(string(skip), c.name) {\n\t\t\t\tt.Skip(\"listed in testdata/skip.txt\")\n\t\t\t}\n\t\t\tif Abs(c.in) != c.want {\n\t\t\t\tt.Fatal(Abs(c.in))\n\t\t\t}\n\t\t})\n\t}\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test, "calc/testdata/skip.txt": "none\n"}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": test, "calc/testdata/skip.txt": "none\nnegative\n"}
	runGateCase(t, gateCase{base: base, head: head, want: verify.Tampered, code: verify.FindingTestVanished})
}

// TestGateRepeatsRunInTheirOwnProcess: a test that fails when run twice in
// one process (package state) but is right in each fresh process is
// credited: repeats of fail-to-pass candidates are separate go test runs,
// not -count=3.
func TestGateRepeatsRunInTheirOwnProcess(t *testing.T) {
	t.Parallel()
	test := "package calc\n\nimport \"testing\"\n\nvar runs int\n\nfunc TestAbsOnce(t *testing.T) {\n\truns++\n\tif runs > 1 {\n\t\tt.Fatal(\"ran twice in one process\")\n\t}\n\tif Abs(-2) != 2 {\n\t\tt.Fatal(Abs(-2))\n\t}\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test}
	rep := runGateCase(t, gateCase{base: base, head: head, want: verify.Verified, credited: []string{"TestAbsOnce"}, flakeRuns: 3})
	for _, tr := range rep.Tests {
		if tr.Name == "TestAbsOnce" && tr.Runs != 3 {
			t.Fatalf("TestAbsOnce ran %d times on the head, want 3", tr.Runs)
		}
	}
}

// TestGateBuildTagsHideATest: the head moves a passing test behind a build
// tag nobody sets; it vanishes at run time.
func TestGateBuildTagsHideATest(t *testing.T) {
	t.Parallel()
	test := "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(-2) != 2 {\n\t\tt.Fatal(Abs(-2))\n\t}\n}\n"
	other := "package calc\n\nimport \"testing\"\n\nfunc TestZero(t *testing.T) {\n\tif Abs(0) != 0 {\n\t\tt.Fatal()\n\t}\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/calc_test.go": test, "calc/zero_test.go": other}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": absBuggy, "calc/calc_test.go": "//go:build slow\n\n" + test, "calc/zero_test.go": other}
	runGateCase(t, gateCase{base: base, head: head, want: verify.Tampered, code: verify.FindingTestVanished})
}

// TestGateMissingCCompilerIsAnError: a cgo package with no C compiler is an
// environment error that names the compiler, not a failed change.
func TestGateMissingCCompilerIsAnError(t *testing.T) {
	t.Parallel()
	cgo := "package calc\n\n// int twice(int x) { return 2 * x; }\nimport \"C\"\n\nfunc Twice(x int) int { return int(C.twice(C.int(x))) }\n"
	test := "package calc\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(2) != 4 {\n\t\tt.Fatal()\n\t}\n}\n"
	base := map[string]string{"go.mod": goMod, "calc/calc.go": cgo}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": cgo, "calc/calc_test.go": test}
	a := &Adapter{GoBin: "go", Env: []string{"CGO_ENABLED=1", "CC=bcode-no-such-cc"}}
	rep := runGateCase(t, gateCase{base: base, head: head, want: verify.Error, adapter: a})
	found := false
	for _, r := range rep.Reasons {
		if strings.Contains(r.Message, "C compiler") && strings.Contains(r.Message, "bcode-no-such-cc") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no reason names the missing C compiler: %+v", rep.Reasons)
	}
}
