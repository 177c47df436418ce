package golang

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// The module every RunTests test runs in: ./calc holds tests with every
// outcome, ./broken does not build, ./slow sleeps past a tiny timeout.
var runModule = map[string]string{
	"go.mod": goMod,
	"calc/calc.go": `package calc

func Add(a, b int) int { return a + b }
`,
	"calc/calc_test.go": `package calc

import (
	"fmt"
	"testing"
)

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

func TestPanics(t *testing.T) {
	var m map[string]int
	m["boom"] = Add(1, 1)
}

func TestAfterPanic(t *testing.T) {}

func TestTable(t *testing.T) {
	t.Run("one plus one", func(t *testing.T) {
		if Add(1, 1) != 2 {
			t.Fatal("1+1")
		}
	})
	t.Run("wrong", func(t *testing.T) { t.Error("wrong on purpose") })
}

func TestSetupFails(t *testing.T) {
	t.Fatal("setup failed before any subtest")
	t.Run("never", func(t *testing.T) {})
}

func ExampleAdd() {
	fmt.Println(Add(1, 2))
	// Output: 3
}

func ExampleAddWrong() {
	fmt.Println(Add(1, 2))
	// Output: 4
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

func TestSlow(t *testing.T) { time.Sleep(time.Minute) }
`,
}

func TestRunTests(t *testing.T) {
	t.Parallel()
	t.Run("count in one process", func(t *testing.T) { t.Parallel(); testRunTests(t, false, false) })
	// Each round a start of its own of the binary compiled once: every
	// outcome and detail must read as go test -json's does.
	t.Run("each round its own process", func(t *testing.T) { t.Parallel(); testRunTests(t, true, false) })
	// The same, starting the binary the suite run kept: no go test -c.
	t.Run("each round the suite run's binary", func(t *testing.T) { t.Parallel(); testRunTests(t, true, true) })
}

// recordingRunner notes the arguments of every command it runs.
type recordingRunner struct {
	sandbox.Runner
	mu   sync.Mutex
	args [][]string
}

func (r *recordingRunner) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	r.mu.Lock()
	r.args = append(r.args, c.Args)
	r.mu.Unlock()
	return r.Runner.Run(ctx, c)
}

func testRunTests(t *testing.T, separate, kept bool) {
	var r sandbox.Runner = newRunner(t)
	dir := writeTree(t, runModule)
	a := New()
	ctx := context.Background()

	tests := goTests("./calc", "TestPass", "TestAssert", "TestSkipped", "TestPanics", "TestAfterPanic",
		"TestTable/one_plus_one", "TestTable/wrong", "TestSetupFails/never", "ExampleAdd", "ExampleAddWrong", "TestMissing")
	tests = append(tests, goTests("./broken", "TestNew")...)
	var rec *recordingRunner
	if kept {
		units := []string{"./calc", "./broken"}
		suite, err := a.RunSuiteKeeping(ctx, r, dir, units, units, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(suite.Failed, "example.com/m/calc.TestAssert") || suite.Outcome != verify.BuildError {
			t.Fatalf("suite run: %s, failed %v", suite.Outcome, suite.Failed)
		}
		bin, _ := keptBinary(dir, "./calc")
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("the suite run kept no binary of ./calc: %v", err)
		}
		rec = &recordingRunner{Runner: r}
		r = rec
		defer func() {
			a.DropBinaries(dir)
			if _, err := os.Stat(keptDir(dir)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("DropBinaries left %s: %v", keptDir(dir), err)
			}
		}()
	}
	const count = 3
	start := time.Now()
	res, err := a.RunTests(ctx, r, dir, tests, verify.RunOptions{Count: count, Timeout: time.Minute, Separate: separate})
	if err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		for _, args := range rec.args {
			if slices.Contains(args, "-c") && slices.Contains(args, "./calc") {
				t.Errorf("ran %q though the suite run kept the binary", args)
			}
		}
	}
	t.Logf("%d tests × %d runs in %s", len(tests), count, time.Since(start).Round(time.Millisecond))
	got := byName(res)
	if len(res) != len(tests)*count {
		t.Errorf("%d results, want %d (Count per test)", len(res), len(tests)*count)
	}
	want := map[string]verify.Outcome{
		"TestPass":               verify.Pass,
		"TestAssert":             verify.Fail,
		"TestSkipped":            verify.Skip,
		"TestPanics":             verify.Fail,
		"TestAfterPanic":         verify.Pass,
		"TestTable/one_plus_one": verify.Pass,
		"TestTable/wrong":        verify.Fail,
		"TestSetupFails/never":   verify.Fail,
		"ExampleAdd":             verify.Pass,
		"ExampleAddWrong":        verify.Fail,
		"TestMissing":            verify.NotRun,
		"TestNew":                verify.BuildError,
	}
	for name, o := range want {
		rs := got[name]
		if len(rs) != count {
			t.Errorf("%s: %d results, want %d", name, len(rs), count)
		}
		for _, r := range rs {
			if r.Outcome != o {
				t.Errorf("%s: %s (%s), want %s", name, r.Outcome, r.Detail, o)
			}
			if r.Test.Language != "go" || r.Test.Name != name {
				t.Errorf("%s: result names test %+v", name, r.Test)
			}
		}
	}
	detail := func(name string) string {
		if rs := got[name]; len(rs) > 0 {
			return rs[0].Detail
		}
		return ""
	}
	for name, frag := range map[string]string{
		"TestAssert":           "Add(2, 2) = 4, want 5",
		"TestPanics":           "assignment to entry in nil map",
		"TestTable/wrong":      "wrong on purpose",
		"TestSetupFails/never": "setup failed before any subtest",
		"ExampleAddWrong":      "want:",
		"TestNew":              "undefined: New",
		"TestSkipped":          "not on this machine",
	} {
		if !strings.Contains(detail(name), frag) {
			t.Errorf("%s: detail %q lacks %q", name, detail(name), frag)
		}
	}
	if d := detail("TestPanics"); strings.Count(d, "\n") > detailLines {
		t.Errorf("panic detail not capped at %d lines: %d", detailLines, strings.Count(d, "\n")+1)
	}
	if strings.Contains(detail("TestAssert"), "=== RUN") {
		t.Errorf("detail keeps go test's progress lines: %q", detail("TestAssert"))
	}
}

func TestRunTestsTimeout(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	dir := writeTree(t, runModule)
	res, err := New().RunTests(context.Background(), r, dir, goTests("./slow", "TestSlow"), verify.RunOptions{Count: 2, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomesOf(res); len(got) != 2 || got[0] != verify.Timeout || got[1] != verify.Timeout {
		t.Fatalf("outcomes %v, want two timeouts", got)
	}
	if !strings.Contains(res[0].Detail, "test timed out after 1s") {
		t.Errorf("detail %q", res[0].Detail)
	}
}

func TestRunTestsInitPanic(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	dir := writeTree(t, map[string]string{
		"go.mod":      goMod,
		"p/p.go":      "package p\n\nvar table = build()\n\nfunc build() map[string]int { var m map[string]int; m[\"x\"] = 1; return m }\n",
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestTable(t *testing.T) { _ = table }\n",
	})
	res, err := New().RunTests(context.Background(), r, dir, goTests("./p", "TestTable"), verify.RunOptions{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The test never ran: it must not look like a failure of its own.
	if got := outcomesOf(res); len(got) != 2 || got[0] != verify.NotRun || got[1] != verify.NotRun {
		t.Fatalf("outcomes %v, want not_run twice", got)
	}
	if !strings.Contains(res[0].Detail, "assignment to entry in nil map") {
		t.Errorf("detail %q lacks the initializer's panic", res[0].Detail)
	}
}

func TestRunTestsEnvironment(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	dir := writeTree(t, runModule)
	a := &Adapter{GoBin: "go-not-installed-here"}
	res, err := a.RunTests(context.Background(), r, dir, goTests("./calc", "TestPass", "TestAssert"), verify.RunOptions{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results, want 4", len(res))
	}
	for _, r := range res {
		if r.Outcome != verify.EnvError || !strings.Contains(r.Detail, "https://go.dev/dl") {
			t.Errorf("%s: %s %q", r.Test.Name, r.Outcome, r.Detail)
		}
	}
}

func TestRunTestsBadInput(t *testing.T) {
	r := newRunner(t)
	a := New()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		tests []verify.Test
		opts  verify.RunOptions
	}{
		"escaping package":  {goTests("../x", "TestA"), verify.RunOptions{Count: 1}},
		"absolute package":  {goTests("/etc", "TestA"), verify.RunOptions{Count: 1}},
		"pattern package":   {goTests("./...", "TestA"), verify.RunOptions{Count: 1}},
		"empty test name":   {goTests("./a", ""), verify.RunOptions{Count: 1}},
		"python test":       {[]verify.Test{{Language: "python", Package: "t.py", Name: "test_x"}}, verify.RunOptions{Count: 1}},
		"negative count":    {goTests("./a", "TestA"), verify.RunOptions{Count: -1}},
		"negative timeout":  {goTests("./a", "TestA"), verify.RunOptions{Count: 1, Timeout: -time.Second}},
		"dot-dot in middle": {goTests("./a/../../b", "TestA"), verify.RunOptions{Count: 1}},
	} {
		if _, err := a.RunTests(ctx, r, t.TempDir(), tc.tests, tc.opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := a.RunTests(ctx, nil, t.TempDir(), nil, verify.RunOptions{Count: 1}); err == nil {
		t.Error("nil runner: no error")
	}
}

func TestPlan(t *testing.T) {
	invs := plan(goTests(".", "TestB", "TestA", "TestC/x", "TestC/y z", "TestA/sub", "TestD/a/b", "Example_x"))
	var got []string
	for _, inv := range invs {
		got = append(got, inv.pattern+" "+strings.Join(names(inv.tests), ","))
	}
	want := []string{
		"^(TestB|TestA|Example_x)$ .:TestB,.:TestA,.:Example_x,.:TestA/sub",
		`^TestC$/^(x|y z)$ .:TestC/x,.:TestC/y z`,
		`^TestD$/^a$/^(b)$ .:TestD/a/b`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
