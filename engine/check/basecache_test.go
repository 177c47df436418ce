package check_test

import (
	"context"
	"database/sql"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// baseRunCounter is a runner that counts the suite runs made in a snapshot
// of the untouched base: a test command (go test, or python running
// pytest) in a directory whose files named in base hold their base
// content, the changes' code and tests alike, and where the files the
// changes add are absent.
type baseRunCounter struct {
	sandbox.Runner
	base map[string]string // path → content on the base; absent: not there

	mu sync.Mutex
	n  int
}

func (c *baseRunCounter) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	if c.isBaseSuite(cmd) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return c.Runner.Run(ctx, cmd)
}

func (c *baseRunCounter) isBaseSuite(cmd sandbox.Command) bool {
	args := strings.Join(cmd.Args, " ")
	if !strings.Contains(args, " test -json") && !strings.Contains(args, "bcode_pytest_log") {
		return false
	}
	for p, want := range c.base {
		got, err := os.ReadFile(filepath.Join(cmd.Dir, filepath.FromSlash(p)))
		if want == absent {
			if err == nil {
				return false
			}
			continue
		}
		if err != nil || string(got) != want {
			return false
		}
	}
	return true
}

func (c *baseRunCounter) runs() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

const absent = "\x00absent"

// baseCacheRepo is goFixRepo (base: Abs wrong for negative numbers; HEAD:
// the fix and its test) with a second change on the same base, on branch
// other: a Max function and its test.
func baseCacheRepo(t *testing.T) (*gitRepo, map[string]string) {
	r := goFixRepo(t, nil)
	base := map[string]string{"max.go": absent, "max_test.go": absent}
	for _, p := range []string{"num.go", "num_test.go"} {
		out, err := testrepo.Command(r.dir, "show", "HEAD~1:"+p).Output()
		if err != nil {
			t.Fatal(err)
		}
		base[p] = string(out)
	}
	r.git("checkout", "-q", "-b", "other", "HEAD~1")
	r.write(map[string]string{
		"max.go":      "package num\n\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n",
		"max_test.go": "package num\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {\n\tif Max(2, 3) != 3 {\n\t\tt.Fatal(Max(2, 3))\n\t}\n}\n",
	})
	r.commit("max")
	r.git("checkout", "-q", "main")
	return r, base
}

// openLedger is a real SQLite ledger in t's temporary directory.
func openLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

var goEnv = []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}

// checkOn runs the gate on base..head of r with o's store and runner.
func checkOn(t *testing.T, r *gitRepo, base, head string, o check.Options) *verify.Report {
	t.Helper()
	o.Scanner, o.Repo, o.Base, o.Head, o.NoEvidence = testScanner(), r.dir, base, head, true
	rep, err := check.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestBaseResultsReusedByALaterChange: the first check on a base runs its
// suite and stores it; a check of another change on the same base reads
// it and runs the base no more, names the reuse, and reaches what a fresh
// run (--no-cache) reaches; so does an agent task's attempt.
func TestBaseResultsReusedByALaterChange(t *testing.T) {
	r, base := baseCacheRepo(t)
	led := openLedger(t)
	runner := &baseRunCounter{Runner: &host.Runner{Extra: goEnv}, base: base}
	first := checkOn(t, r, "HEAD~1", "main", check.Options{Runner: runner, Recorder: led})
	if first.Verdict != verify.Verified || first.BaseReused != nil || runner.runs() != 1 {
		t.Fatalf("first check: %s, reused %+v, %d base runs: want verified, the base run once", first.Verdict, first.BaseReused, runner.runs())
	}
	later := checkOn(t, r, "main~1", "other", check.Options{Runner: runner, Recorder: led})
	if runner.runs() != 1 || later.BaseReused == nil {
		t.Fatalf("a later change on the same base: %d base runs, reused %+v: want the stored run", runner.runs(), later.BaseReused)
	}
	if !strings.Contains(strings.Join(later.Notes, "\n"), "base results reused from") {
		t.Errorf("notes %q do not name the reuse", later.Notes)
	}
	fresh := checkOn(t, r, "main~1", "other", check.Options{Runner: runner, Recorder: led, NoCache: true})
	if runner.runs() != 2 || fresh.BaseReused != nil {
		t.Fatalf("--no-cache: %d base runs, reused %+v: want the base run again", runner.runs(), fresh.BaseReused)
	}
	sameJudgement(t, later, fresh)
	// An agent task's attempt on the same base (the task runner's gate)
	// reads the same run.
	agent := checkOn(t, r, "main~1", "main", check.Options{Runner: runner, Recorder: led, TaskID: "task-2", Attempt: 1})
	if agent.BaseReused == nil || runner.runs() != 2 {
		t.Fatalf("a task's attempt: reused %+v, %d base runs: want the stored run", agent.BaseReused, runner.runs())
	}
}

// sameJudgement fails unless a and b reach the same verdict for the same
// reasons, tests and pass-to-pass.
func sameJudgement(t *testing.T, a, b *verify.Report) {
	t.Helper()
	if a.Verdict != b.Verdict || !reflect.DeepEqual(a.Reasons, b.Reasons) || a.Candidates != b.Candidates ||
		!reflect.DeepEqual(a.PassToPass, b.PassToPass) || len(a.Tests) != len(b.Tests) {
		t.Fatalf("reused %s %v %+v, fresh %s %v %+v", a.Verdict, a.Reasons, a.PassToPass, b.Verdict, b.Reasons, b.PassToPass)
	}
	for i := range a.Tests {
		x, y := a.Tests[i], b.Tests[i]
		if x.Name != y.Name || x.Credited != y.Credited || x.Reason != y.Reason || x.BaseOutcome != y.BaseOutcome || x.HeadOutcome != y.HeadOutcome {
			t.Errorf("test %d: reused %+v, fresh %+v", i, x, y)
		}
	}
}

// TestBaseResultsNeverReusedAcrossBasesToolchainsOrEnvironments: after a
// stored run, a base whose tree differs by one byte, a go that reports
// another version (the same PATH), an environment value that reaches the
// tests, another flake_runs each run the base again; the first setting
// still finds its stored run afterwards.
func TestBaseResultsNeverReusedAcrossBasesToolchainsOrEnvironments(t *testing.T) {
	r, base := baseCacheRepo(t)
	// A base one byte away (a comment in num.go's neighbour), with the
	// same fix on top of it.
	r.git("checkout", "-q", "-b", "moved", "main~1")
	r.write(map[string]string{"doc.go": "// Package num.\npackage num\n"})
	r.commit("doc")
	r.git("cherry-pick", "main")
	r.git("checkout", "-q", "main")
	fakeGo, mode := goWrapper(t)
	env := append([]string{"PATH=" + fakeGo + string(os.PathListSeparator) + os.Getenv("PATH")}, goEnv...)
	led := openLedger(t)
	runner := &baseRunCounter{Runner: &host.Runner{Extra: env}, base: base}
	withFlakes := func(n int) *config.Config { c := config.Default(); c.Gate.FlakeRuns = n; return &c }
	o := check.Options{Runner: runner, Recorder: led, Config: withFlakes(3)}
	checkOn(t, r, "main~1", "main", o)
	if n := runner.runs(); n != 1 {
		t.Fatalf("first check: %d base runs", n)
	}
	misses := []struct {
		name       string
		base, head string
		o          check.Options
		setup      func()
	}{
		{name: "a base tree one file apart", base: "moved~1", head: "moved", o: o},
		{name: "go reporting another version", base: "main~1", head: "main", o: o, setup: func() { write(t, mode, "fake") }},
		{name: "an environment value the tests see", base: "main~1", head: "main",
			o: check.Options{Runner: &baseRunCounter{Runner: &host.Runner{Extra: append(env, "NUM_FLAVOUR=2")}, base: base}, Recorder: led, Config: withFlakes(3)}},
		{name: "flake_runs 5", base: "main~1", head: "main", o: check.Options{Runner: runner, Recorder: led, Config: withFlakes(5)}},
	}
	for _, m := range misses {
		if m.setup != nil {
			m.setup()
		}
		counter := m.o.Runner.(*baseRunCounter)
		before := counter.runs()
		rep := checkOn(t, r, m.base, m.head, m.o)
		write(t, mode, "real")
		if rep.BaseReused != nil || counter.runs() != before+1 {
			t.Errorf("%s: reused %+v, base runs %d → %d: want the base run again", m.name, rep.BaseReused, before, counter.runs())
		}
		if rep.Verdict != verify.Verified {
			t.Errorf("%s: %s %v", m.name, rep.Verdict, rep.Reasons)
		}
	}
	again := checkOn(t, r, "main~1", "main", o)
	if again.BaseReused == nil {
		t.Fatalf("the first setting again: not reused (%v)", again.Notes)
	}
}

// TestBaseResultsUnkeyedAreNeitherKeptNorReused: a JavaScript file in the
// tree of a person's own check (whose tests would import the checkout's
// installed packages, which no key covers) leaves the base unkeyed: it
// runs every time, and the report says why.
func TestBaseResultsUnkeyedAreNeitherKeptNorReused(t *testing.T) {
	r, base := baseCacheRepo(t)
	r.git("checkout", "-q", "-b", "js", "main~1")
	r.write(map[string]string{"tool.js": "console.log(1)\n"})
	r.commit("a script")
	r.git("cherry-pick", "main")
	led := openLedger(t)
	runner := &baseRunCounter{Runner: &host.Runner{Extra: goEnv}, base: base}
	for i := range 2 {
		rep := checkOn(t, r, "js~1", "js", check.Options{Runner: runner, Recorder: led})
		if rep.BaseReused != nil || runner.runs() != i+1 {
			t.Fatalf("check %d: reused %+v, %d base runs: want the base run each time", i+1, rep.BaseReused, runner.runs())
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), "cannot key the base: javascript toolchain") {
			t.Errorf("check %d: notes %q do not say why the base was not kept", i+1, rep.Notes)
		}
	}
}

// goWrapper is a directory holding a go that runs the real one, except
// that while its mode file says "fake" go env reports a version of its
// own; the mode file starts "real".
func goWrapper(t *testing.T) (dir, mode string) {
	testenv.Go(t)
	real, err := osexec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	mode = filepath.Join(dir, "mode")
	write(t, mode, "real")
	script := "#!/bin/sh\nif [ \"$1\" = env ] && [ \"$(cat " + mode + ")\" = fake ]; then\n\t" + real + " \"$@\" | sed '1s/$/-fake/'\n\texit 0\nfi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, mode
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBaseResultsCorruptRowIsRunAgain: a stored row that does not decode
// (here: cut in half in the ledger) is never trusted: the base runs, the
// verdict is the same, and the row is replaced by one the next check reads.
func TestBaseResultsCorruptRowIsRunAgain(t *testing.T) {
	r, base := baseCacheRepo(t)
	led := openLedger(t)
	runner := &baseRunCounter{Runner: &host.Runner{Extra: goEnv}, base: base}
	o := check.Options{Runner: runner, Recorder: led}
	checkOn(t, r, "main~1", "main", o)
	err := led.Write(context.Background(), func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE base_results SET data = substr(data, 1, length(data) / 2)`)
		if n, _ := res.RowsAffected(); err == nil && n != 1 {
			t.Fatalf("%d stored rows, want 1", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := checkOn(t, r, "main~1", "other", o)
	// Green: TestMax does not build on the base (Max is new), so nothing
	// is credited; the suites pass.
	if rep.BaseReused != nil || runner.runs() != 2 || rep.Verdict != verify.Green {
		t.Fatalf("after a corrupt row: %s, reused %+v, %d base runs: want green with the base run again", rep.Verdict, rep.BaseReused, runner.runs())
	}
	if rep := checkOn(t, r, "main~1", "main", o); rep.BaseReused == nil || runner.runs() != 2 {
		t.Fatalf("the run stored over the corrupt row is not reused: %d base runs", runner.runs())
	}
}

// TestBaseResultsReusedForPytest: the same for a Python repository, with
// the interpreter, pytest and the installed distributions in the key.
func TestBaseResultsReusedForPytest(t *testing.T) {
	testenv.SystemPytest(t)
	r := clampFixRepo(t, nil)
	base := map[string]string{"tests/test_max.py": absent}
	for _, p := range []string{"shop/clamp.py", "tests/test_clamp.py"} {
		out, err := testrepo.Command(r.dir, "show", "HEAD~1:"+p).Output()
		if err != nil {
			t.Fatal(err)
		}
		base[p] = string(out)
	}
	r.git("checkout", "-q", "-b", "other", "HEAD~1")
	r.write(map[string]string{"tests/test_max.py": "def test_max():\n    assert max(2, 3) == 3\n"})
	r.commit("a test of max")
	r.git("checkout", "-q", "main")
	led := openLedger(t)
	runner := &baseRunCounter{Runner: host.New(), base: base}
	first := checkOn(t, r, "main~1", "main", check.Options{Runner: runner, Recorder: led})
	later := checkOn(t, r, "main~1", "other", check.Options{Runner: runner, Recorder: led})
	if first.BaseReused != nil || later.BaseReused == nil || runner.runs() != 1 {
		t.Fatalf("pytest: reused first %+v, later %+v, %d base runs: want the later check to read the first's", first.BaseReused, later.BaseReused, runner.runs())
	}
	fresh := checkOn(t, r, "main~1", "other", check.Options{Runner: runner, Recorder: led, NoCache: true})
	sameJudgement(t, later, fresh)
}
