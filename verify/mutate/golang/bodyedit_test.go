package golang

import (
	"context"
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

// The package of the body-edit tests: TestDouble reaches Double only,
// TestSign Sign only, TestBoth both; Limit is a package variable and init
// runs for every test.
const shapesHead = `package shapes

var Limit = 10

var started bool

func init() { started = true }

func Double(n int) int {
	if n > Limit {
		return Limit * 2
	}
	return n * 2
}

func Sign(n int) int {
	if n < 0 {
		return -1
	}
	return 1
}
`

const shapesTest = `package shapes

import "testing"

func TestDouble(t *testing.T) {
	if Double(3) != 6 || Double(40) != 2*Limit {
		t.Fatal("Double")
	}
}

func TestSign(t *testing.T) {
	if Sign(-2) != -1 || Sign(2) != 1 {
		t.Fatal("Sign")
	}
}

func TestBoth(t *testing.T) {
	if !started || Sign(Double(-1)) != -1 {
		t.Fatal("Both")
	}
}
`

// TestBodyEditKeepsTheTestsThatDidNotReachIt: a save that edits Sign's
// body runs again exactly the tests whose coverage reached Sign (TestSign,
// TestBoth) and keeps TestDouble's; a save that edits init runs them all;
// one that changes a package variable or a test file runs the full
// baseline. Every save's verdicts equal those of a full baseline on the
// same tree (a fresh cache).
func TestBodyEditKeepsTheTestsThatDidNotReachIt(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	dir := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod":                "module example.com/m\n\ngo 1.22\n",
		"shapes/shapes.go":      "package shapes\n\nvar Limit = 10\n\nvar started bool\n\nfunc init() { started = true }\n\nfunc Double(n int) int { return n * 2 }\n\nfunc Sign(n int) int { return 1 }\n",
		"shapes/shapes_test.go": strings.Replace(shapesTest, "Sign(-2) != -1 || ", "", 1),
	}, map[string]string{
		"shapes/shapes.go":      shapesHead,
		"shapes/shapes_test.go": shapesTest,
	})
	cache := t.TempDir()
	save := func(file, from, to string) {
		t.Helper()
		path := filepath.Join(dir, "shapes", file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), from) {
			t.Fatalf("%s has no %q", file, from)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(data), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(cacheDir string) *mutate.Report {
		t.Helper()
		rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: cacheDir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// check runs the save with the kept cache and with a fresh one, and
	// compares their verdicts and stats.
	check := func(what string, kept, rerun int) {
		t.Helper()
		saved, full := run(cache), run(t.TempDir())
		if saved.Stats.BaselineKept != kept || saved.Stats.BaselineRerun != rerun || saved.Stats.BaselineInProcess != 1 {
			t.Errorf("%s: stats %+v, want %d tests kept and %d run again in one process", what, saved.Stats, kept, rerun)
		}
		if full.Stats.BaselineKept != 0 || full.Stats.BaselineRerun != 0 {
			t.Errorf("%s: a fresh cache kept tests: %+v", what, full.Stats)
		}
		sameVerdicts(t, what, saved, full)
	}
	first := run(cache)
	if first.Stats.BaselineInProcess != 1 || len(first.Mutants) == 0 {
		t.Fatalf("first run: stats %+v, %d mutants", first.Stats, len(first.Mutants))
	}
	save("shapes.go", "if n < 0 {", "if n <= -1 {")
	check("a body edit of Sign", 1, 2)
	save("shapes.go", "return Limit * 2", "return 2 * Limit")
	check("a body edit of Double", 1, 2)
	// Double gains a line: Sign, below it, moved and counts as changed.
	save("shapes.go", "return n * 2\n", "m := n * 2\n\treturn m\n")
	check("a body edit of Double that moves Sign", 0, 3)
	save("shapes.go", "func init() { started = true }", "func init() { started = !started }")
	check("a body edit of init", 0, 3)
	save("shapes.go", "var Limit = 10", "var Limit = 12")
	check("a package variable", 0, 0)
	save("shapes_test.go", "func TestBoth", "// TestBoth calls both.\nfunc TestBoth")
	check("a test file", 0, 0)
	save("shapes.go", "if n <= -1 {", "if n < 0 {")
	check("the next body edit of Sign", 1, 2)
}

// sameVerdicts fails when two reports of the same tree differ in a
// mutant, its verdict or its covering tests. The killing test is not
// compared: runOrder puts tests in classes of their baseline time, which
// differs between two runs of a baseline.
func sameVerdicts(t *testing.T, what string, got, want *mutate.Report) {
	t.Helper()
	if len(got.Mutants) != len(want.Mutants) {
		t.Fatalf("%s: %d mutants, a full baseline %d", what, len(got.Mutants), len(want.Mutants))
	}
	for i, m := range want.Mutants {
		o := got.Mutants[i]
		if o.ID != m.ID || o.Verdict != m.Verdict || !reflect.DeepEqual(o.Tests, m.Tests) {
			t.Errorf("%s: %s:%d %q: %s by %q (tests %v), a full baseline %s by %q (tests %v)", what, m.File, m.Line, m.Mutated, o.Verdict, o.KilledBy, o.Tests, m.Verdict, m.KilledBy, m.Tests)
		}
	}
	if !reflect.DeepEqual(got.Quarantined, want.Quarantined) {
		t.Errorf("%s: quarantined %v, a full baseline %v", what, got.Quarantined, want.Quarantined)
	}
}
