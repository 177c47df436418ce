package golang

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// The one-process baseline (every test through its own m.Run in one
// process of the schema binary) must judge every mutant as a process per
// test does, with the same covering tests.
func TestOneProcessBaselineAgreesWithPerProcess(t *testing.T) {
	c := calcReport(t)
	if c.rep.Stats.BaselineInProcess != 1 {
		t.Fatalf("calc's baseline did not run in one process (stats %+v)", c.rep.Stats)
	}
	// TestFlaky fails once its marker exists; a fresh baseline needs it gone.
	if err := os.Remove(filepath.Join(c.dir, "flaky.marker")); err != nil {
		t.Fatal(err)
	}
	rep, err := runGo(context.Background(), host.New(), c.dir, c.change, mutate.Options{Workers: 2, CacheDir: t.TempDir(), PerProcessBaseline: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats.BaselineInProcess != 0 || rep.Stats.BaselineCached != 0 {
		t.Fatalf("PerProcessBaseline: stats %+v, want a fresh per-process baseline", rep.Stats)
	}
	byID := map[string]mutate.Mutant{}
	for _, m := range rep.Mutants {
		byID[m.ID] = m
	}
	if len(rep.Mutants) != len(c.rep.Mutants) {
		t.Fatalf("per-process run has %d mutants, one-process run %d", len(rep.Mutants), len(c.rep.Mutants))
	}
	for _, m := range c.rep.Mutants {
		o := byID[m.ID]
		if o.Verdict != m.Verdict || !reflect.DeepEqual(o.Tests, m.Tests) {
			t.Errorf("%s:%d %s %q: one process says %s by %v, per process %s by %v", m.File, m.Line, m.Operator, m.Mutated, m.Verdict, m.Tests, o.Verdict, o.Tests)
		}
	}
	if !reflect.DeepEqual(rep.Quarantined, c.rep.Quarantined) {
		t.Errorf("quarantined: per process %v, one process %v", rep.Quarantined, c.rep.Quarantined)
	}
}

const crashBase = `package crash

func Over(n int) bool { return n > 1 }
`

const crashHead = `package crash

func Over(n int) bool { return n > 2 }
`

// TestA's panic ends the one-process baseline; the tests after it must
// still run (TestC fails on its own), and a package with its own TestMain
// must fall back to a process per test and still get verdicts.
const crashTest = `package crash

import "testing"

func TestA(t *testing.T) { panic("boom") }

func TestB(t *testing.T) {
	if !Over(5) {
		t.Fatal("Over(5)")
	}
}

func TestC(t *testing.T) { t.Fatal("fails alone too") }
`

const mainBase = `package withmain

func Small(n int) bool { return n < 10 }
`

const mainHead = `package withmain

func Small(n int) bool { return n < 20 }
`

const mainTest = `package withmain

import (
	"os"
	"testing"
)

var ready bool

func TestMain(m *testing.M) {
	ready = true
	os.Exit(m.Run())
}

func TestSmall(t *testing.T) {
	if !ready || !Small(19) || Small(20) {
		t.Fatal("Small")
	}
}
`

func TestOneProcessBaselineCrashAndOwnTestMain(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	dir := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod":              "module example.com/m\n\ngo 1.22\n",
		"crash/crash.go":      crashBase,
		"crash/crash_test.go": "package crash\n",
		"withmain/small.go":   mainBase,
		"withmain/x_test.go":  "package withmain\n",
	}, map[string]string{
		"crash/crash.go":      crashHead,
		"crash/crash_test.go": crashTest,
		"withmain/small.go":   mainHead,
		"withmain/x_test.go":  mainTest,
	})
	_, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: t.TempDir(), Files: []string{"crash/crash.go"}}, nil)
	var be *mutate.BaselineError
	if !errors.As(err, &be) || strings.Join(be.Failed, ",") != "TestA,TestC" {
		t.Fatalf("crash package: %v, want a red baseline naming TestA and TestC", err)
	}

	rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: t.TempDir(), Files: []string{"withmain/small.go"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats.BaselineInProcess != 0 {
		t.Errorf("a package with its own TestMain took the generated one (stats %+v)", rep.Stats)
	}
	m := find(t, rep, 3, mutate.OpConditionalBoundary, "n <= 20")
	if m.Verdict != mutate.Killed || m.KilledBy != "TestSmall" {
		t.Errorf("n <= 20: %s by %q, want killed by TestSmall", m.Verdict, m.KilledBy)
	}
}

// A second run of an unchanged package builds nothing: the baseline and
// the schema binary come from the cache, and the verdicts are the same.
func TestUnchangedPackageReusesSchemaBinary(t *testing.T) {
	c := calcReport(t)
	var rep *mutate.Report
	for i := 0; i < 2; i++ {
		var err error
		rep, err = runGo(context.Background(), host.New(), c.dir, c.change, mutate.Options{Workers: 2, CacheDir: c.cache}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if rep.Stats.BaselineCached != 1 || rep.Stats.SchemaCached != 1 {
		t.Fatalf("second run: stats %+v, want the baseline and the schema binary from the cache", rep.Stats)
	}
	if len(rep.Mutants) != len(c.rep.Mutants) {
		t.Fatalf("cached run has %d mutants, first run %d", len(rep.Mutants), len(c.rep.Mutants))
	}
	for i, m := range c.rep.Mutants {
		if o := rep.Mutants[i]; o.ID != m.ID || o.Verdict != m.Verdict {
			t.Errorf("%s:%d %s %q: first run %s, cached binary %s (%s)", m.File, m.Line, m.Operator, m.Mutated, m.Verdict, o.Verdict, o.Detail)
		}
	}
}

// The run after a cold one takes the schema binary the cold run's
// baseline built, though the package has a mutant no test covers: the
// cold run builds its schema before coverage is known, with that mutant in
// it, and the next run's schema must be the same files (it left the
// mutant out, missed the cache and built the schema again).
func TestRunAfterColdReusesSchemaWithUncoveredMutant(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	const base = "package sign\n\nfunc Sign(n int) int { return 0 }\n"
	const head = `package sign

func Sign(n int) int {
	if n < -1000 {
		if n < -2000 {
			return n / 1000
		}
		return -2
	}
	if n > 0 {
		return 1
	}
	return 0
}
`
	const test = `package sign

import "testing"

func TestSign(t *testing.T) {
	if Sign(5) != 1 || Sign(0) != 0 {
		t.Fatal("Sign")
	}
}
`
	dir := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n", "sign/sign.go": base,
	}, map[string]string{
		"sign/sign.go": head, "sign/sign_test.go": test,
	})
	cache := t.TempDir()
	var reps [2]*mutate.Report
	for i := range reps {
		rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: cache}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reps[i] = rep
	}
	if reps[0].Stats.BaselineInProcess != 1 || reps[0].Stats.Verdicts[mutate.NotCovered] == 0 || reps[0].Stats.Verdicts[mutate.Killed] == 0 {
		t.Fatalf("cold run: stats %+v, want the one-process baseline, a killed mutant and one no test covers", reps[0].Stats)
	}
	if reps[1].Stats.BaselineCached != 1 || reps[1].Stats.SchemaCached != 1 {
		t.Fatalf("run after the cold one: stats %+v, want the baseline and the schema binary from the cache", reps[1].Stats)
	}
	for i, m := range reps[0].Mutants {
		if o := reps[1].Mutants[i]; o.ID != m.ID || o.Verdict != m.Verdict || o.KilledBy != m.KilledBy {
			t.Errorf("%s:%d %s %q: cold %s by %q, then %s by %q", m.File, m.Line, m.Operator, m.Mutated, m.Verdict, m.KilledBy, o.Verdict, o.KilledBy)
		}
	}
}

// A module whose go.mod names an old language version (go 1.12: no 0o
// literals, no generics) still gets the one-process baseline: the
// generated TestMain compiles at that version, so the package is built
// once, not three times (a coverage binary, a process per test, a schema).
func TestOneProcessBaselineAtOldLanguageVersion(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	dir := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod":          "module example.com/old\n\ngo 1.12\n",
		"old/old.go":      "package old\n\nfunc Small(n int) bool { return n < 10 }\n",
		"old/old_test.go": "package old\n\nimport \"testing\"\n\nfunc TestSmall(t *testing.T) {\n\tif !Small(9) || Small(10) {\n\t\tt.Fatal(\"Small\")\n\t}\n}\n",
	}, map[string]string{
		"old/old.go":      "package old\n\nfunc Small(n int) bool { return n < 20 }\n",
		"old/old_test.go": "package old\n\nimport \"testing\"\n\nfunc TestSmall(t *testing.T) {\n\tif !Small(19) || Small(20) {\n\t\tt.Fatal(\"Small\")\n\t}\n}\n",
	})
	rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats.BaselineInProcess != 1 {
		t.Fatalf("go 1.12 module: stats %+v, notes %v; want the one-process baseline", rep.Stats, rep.Notes)
	}
	m := find(t, rep, 3, mutate.OpConditionalBoundary, "n <= 20")
	if m.Verdict != mutate.Killed || m.KilledBy != "TestSmall" {
		t.Errorf("n <= 20: %s by %q, want killed by TestSmall", m.Verdict, m.KilledBy)
	}
}

// A mutant run orders its covering tests by their baseline times: a slow
// test first in the file no longer runs before the cheap one that kills
// the mutant (with -test.failfast the run ends there). The verdict is the
// same; the test that killed it is the cheap one, from the baseline's
// binary and from a cached schema binary alike. A package run with the
// per-process baseline has no generated TestMain and keeps source order.
func TestMutantRunsCheapTestsFirst(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	dir := filepath.Join(t.TempDir(), "repo")
	const test = `package slow

import (
	"testing"
	"time"
)

func TestSlowFirst(t *testing.T) {
	time.Sleep(60 * time.Millisecond)
	if Small(10) {
		t.Fatal("Small(10)")
	}
}

func TestFast(t *testing.T) {
	if !Small(9) || Small(10) {
		t.Fatal("Small")
	}
}
`
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod":         "module example.com/slow\n\ngo 1.22\n",
		"slow/slow.go":   "package slow\n\nfunc Small(n int) bool { return n < 20 }\n",
		"slow/s_test.go": strings.ReplaceAll(test, "10", "20"),
	}, map[string]string{
		"slow/slow.go":   "package slow\n\nfunc Small(n int) bool { return n < 10 }\n",
		"slow/s_test.go": test,
	})
	cache := t.TempDir()
	for i, want := range []string{"TestFast", "TestFast"} {
		rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: cache}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && rep.Stats.SchemaCached != 1 {
			t.Fatalf("second run: stats %+v, want the schema binary from the cache", rep.Stats)
		}
		m := find(t, rep, 3, mutate.OpConditionalBoundary, "n <= 10")
		if m.Verdict != mutate.Killed || m.KilledBy != want {
			t.Errorf("run %d: n <= 10: %s by %q, want killed by %s (tests %v)", i, m.Verdict, m.KilledBy, want, m.Tests)
		}
	}
	rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: t.TempDir(), PerProcessBaseline: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := find(t, rep, 3, mutate.OpConditionalBoundary, "n <= 10"); m.Verdict != mutate.Killed || m.KilledBy != "TestSlowFirst" {
		t.Errorf("per-process baseline: n <= 10: %s by %q, want killed by TestSlowFirst (source order)", m.Verdict, m.KilledBy)
	}
}

// A mutant that one test kills and another, cheaper one hangs on keeps the
// verdict of a run in source order: the ordered run hangs in the cheap
// test, and the tests before it in the file then run, so the slow test
// that comes first kills it, as before, instead of a timeout.
func TestOrderedRunKeepsSourceOrderVerdictOnAHang(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	dir := filepath.Join(t.TempDir(), "repo")
	const src = `package count

// Count counts down from n in steps of by; -1 for a step below 1.
func Count(n, by int) int {
	if by < 1 {
		return -1
	}
	c := 0
	for n > 0 {
		n -= by
		c++
	}
	return c
}
`
	const test = `package count

import (
	"testing"
	"time"
)

func TestSlowFirst(t *testing.T) {
	time.Sleep(60 * time.Millisecond)
	if Count(3, 1) != 3 {
		t.Fatal("Count(3, 1)")
	}
}

func TestFast(t *testing.T) {
	if Count(3, 0) != -1 {
		t.Fatal("Count(3, 0)")
	}
}
`
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod":          "module example.com/count\n\ngo 1.22\n",
		"count/count.go":  "package count\n",
		"count/c_test.go": "package count\n",
	}, map[string]string{
		"count/count.go":  src,
		"count/c_test.go": test,
	})
	rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// by >= 1: TestSlowFirst fails (Count(3, 1) is -1), TestFast hangs.
	m := find(t, rep, 5, mutate.OpRelationalNegation, "by >= 1")
	if m.Verdict != mutate.Killed || m.KilledBy != "TestSlowFirst" {
		t.Errorf("by >= 1: %s by %q (%s), want killed by TestSlowFirst as in source order", m.Verdict, m.KilledBy, m.Detail)
	}
}
