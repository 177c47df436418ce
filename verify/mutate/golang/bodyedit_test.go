package golang

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
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

// TestChangedDecls: which declarations a save changed, from the
// declarations stripBodies reads, and when a save cannot keep tests.
func TestChangedDecls(t *testing.T) {
	const base = "package p\n\nfunc A() int {\n\treturn 1\n}\n\ntype T int\n\nvar v = B()\n\nfunc B() int { return 2 }\n"
	decls := func(src string) []declSpan {
		t.Helper()
		_, ds, ok := stripBodies([]byte(src))
		if !ok {
			t.Fatalf("%q does not parse", src)
		}
		return ds
	}
	cases := []struct {
		name, head string
		counted    bool
		want       []string // the changed functions' first lines; nil with ok false
		ok         bool
	}{
		{"nothing", base, true, nil, true},
		{"A's body, same lines", strings.Replace(base, "return 1", "return 3", 1), true, []string{"3"}, true},
		{"B's body", strings.Replace(base, "return 2", "return 4", 1), true, []string{"11"}, true},
		{"A's body in a file without counters", strings.Replace(base, "return 1", "return 3", 1), false, nil, false},
		// A gains a line: T moves (no code), v's initialiser moves (it runs
		// at start-up, where a position can be recorded).
		{"A gains a line", strings.Replace(base, "return 1", "x := 1\n\treturn x", 1), true, nil, false},
	}
	for _, c := range cases {
		cover := []string{}
		if c.counted {
			cover = []string{"p.go"}
		}
		changed, ok := changedDecls(map[string][]declSpan{"p.go": decls(base)}, map[string][]declSpan{"p.go": decls(c.head)}, cover)
		var got []string
		for _, d := range changed {
			got = append(got, strconv.Itoa(d.span.SL))
		}
		if ok != c.ok || ok && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: changed %v, ok %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	// Without the var, a line added to A moves B (changed) and T (kept).
	noVar := strings.Replace(base, "var v = B()\n\n", "", 1)
	changed, ok := changedDecls(map[string][]declSpan{"p.go": decls(noVar)}, map[string][]declSpan{"p.go": decls(strings.Replace(noVar, "return 1", "x := 1\n\treturn x", 1))}, []string{"p.go"})
	if !ok || len(changed) != 2 || changed[0].span.SL != 3 || changed[1].span.SL != 9 {
		t.Errorf("a line added to A: changed %+v, ok %v; want A and B", changed, ok)
	}
	// Another number of declarations: a function added.
	if _, ok := changedDecls(map[string][]declSpan{"p.go": decls(base)}, map[string][]declSpan{"p.go": decls(base + "\nfunc C() {}\n")}, []string{"p.go"}); ok {
		t.Error("a function added: ok")
	}
}

// TestBodyShape: the shape key is the same across edits inside function
// bodies and differs for anything else; a Go file that may read Go sources
// gives no shape.
func TestBodyShape(t *testing.T) {
	const src = "package p\n\n// A is one.\nfunc A() int {\n\treturn 1\n}\n\nvar v = 1\n"
	const test = "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { _ = A() }\n"
	shape := func(src, test string) (string, bool) {
		t.Helper()
		k, _, ok := bodyShape([]keyFile{{rel: "p/p.go", data: []byte(src), own: true}, {rel: "p/p_test.go", data: []byte(test)}}, "header")
		return k, ok
	}
	base, ok := shape(src, test)
	if !ok {
		t.Fatal("no shape")
	}
	for _, c := range []struct {
		name, src, test string
		same            bool
	}{
		{"a body edit", strings.Replace(src, "return 1", "x := 2\n\treturn x - 1", 1), test, true},
		{"a package variable", strings.Replace(src, "var v = 1", "var v = 2", 1), test, false},
		{"a doc comment", strings.Replace(src, "A is one", "A is 1", 1), test, false},
		{"a signature", strings.Replace(src, "A() int", "A() int64", 1), test, false},
		{"a test file", src, test + "\n// more\n", false},
	} {
		k, ok := shape(c.src, c.test)
		if !ok || (k == base) != c.same {
			t.Errorf("%s: same shape %v (ok %v), want %v", c.name, k == base, ok, c.same)
		}
	}
	if _, ok := shape(src, strings.Replace(test, "_ = A()", "_, _, _, _ = runtime.Caller(0)", 1)); ok {
		t.Error("a test that reads positions of sources: a shape")
	}
}
