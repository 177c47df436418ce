package check_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
)

// BenchmarkGateReusingTheBase measures what the base's stored results
// (verify.BaseResults, in a fresh SQLite ledger per round) save: a first
// attempt's gate, which runs and stores the base, and a later attempt's
// on the same base, which reads it, against the plain head suite (`go
// test -count=1 -vet=off ./...`, `python3 -m pytest -q`) and against the
// floor of each: the runs the gate's definition needs, made plainly with
// no bcode, two at a time as the gate's run slots are on two cores (the
// first: base and head whole, the base with the head's test file and the
// head with the base's, each of those the changed test file or package
// only, then, for Python, the fail-to-pass test's two repeat rounds per
// side, each a pytest of its own, the sides side by side; the later: the
// head whole, the head with the base's test file and, for Python, the
// head's two repeat rounds, all two at a time: the base and the base with
// the head's tests, repeats included, are stored; Go runs the latter
// again; Go's repeats start kept binaries and are left out). The repositories are BenchmarkGateAgainstPlainRunsLarger's.
//
// bcode's caches start empty (a fresh ledger, no stored base); the Go
// build cache is the user's, warm after the first round for what does not
// depend on the directory (the standard library). Each round's repository
// is new, so its first attempt lays its snapshots out at stable paths no
// gate used before and compiles every package; the later attempt's
// snapshots are at the same paths (gitchange.Workspace), where go's build
// cache has the packages it did not change. Each plain measurement runs in
// fresh worktrees (what running the suite once costs a user), and the
// plain head suite runs a second time in its worktree (what re-running it
// there costs). It reports first-s, later-s, head-s, head-again-s,
// floor-first-s, floor-later-s, the ratios later/head (the issue's
// target: ≤ 1.2), later/head-again, first/floor and later/floor, and
// load1, the one-minute load average when the round started.
//
//	go test ./engine/check -run '^$' -bench GateReusingTheBase -benchtime 1x
func BenchmarkGateReusingTheBase(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go is not on PATH")
	}
	for _, lang := range []string{"go", "python"} {
		if lang == "python" && !testenv.HaveSystemPytest() {
			continue
		}
		b.Run(lang, func(b *testing.B) {
			var sum reusingTimes
			load := 0.0
			for range b.N {
				b.StopTimer()
				load += load1()
				sum.add(reusingRound(b, lang))
			}
			n := float64(b.N)
			b.ReportMetric(sum.first.Seconds()/n, "first-s")
			b.ReportMetric(sum.later.Seconds()/n, "later-s")
			b.ReportMetric(sum.head.Seconds()/n, "head-s")
			b.ReportMetric(sum.headAgain.Seconds()/n, "head-again-s")
			b.ReportMetric(sum.floorFirst.Seconds()/n, "floor-first-s")
			b.ReportMetric(sum.floorLater.Seconds()/n, "floor-later-s")
			b.ReportMetric(sum.later.Seconds()/sum.head.Seconds(), "later/head")
			b.ReportMetric(sum.later.Seconds()/sum.headAgain.Seconds(), "later/head-again")
			b.ReportMetric(sum.first.Seconds()/sum.floorFirst.Seconds(), "first/floor")
			b.ReportMetric(sum.later.Seconds()/sum.floorLater.Seconds(), "later/floor")
			b.ReportMetric(load/n, "load1")
		})
	}
}

type reusingTimes struct {
	first, later, head, headAgain, floorFirst, floorLater time.Duration
}

func (s *reusingTimes) add(o reusingTimes) {
	s.first += o.first
	s.later += o.later
	s.head += o.head
	s.headAgain += o.headAgain
	s.floorFirst += o.floorFirst
	s.floorLater += o.floorLater
}

// reusingRound is one round: a generated repository, a fresh ledger, the
// first and a later attempt's gate on the change, the plain head run and
// the two floors.
func reusingRound(b *testing.B, lang string) reusingTimes {
	ctx := context.Background()
	dir := b.TempDir()
	base, headRev := generatedRepo(b, dir, lang)
	led, err := ledger.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer led.Close()
	gate := func() time.Duration {
		b.StartTimer()
		t0 := time.Now()
		rep, err := check.Run(ctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: headRev, Runner: host.New(), Recorder: led, NoEvidence: true})
		d := time.Since(t0)
		b.StopTimer()
		if err != nil || rep == nil {
			b.Fatalf("check: %v", err)
		}
		b.Logf("%s: %s in %v, base reused %+v, timings %v", lang, rep.Verdict, d.Round(time.Millisecond), rep.BaseReused, rep.Timings)
		return d
	}
	var t reusingTimes
	t.first, t.later = gate(), gate()
	// Each plain measurement in worktrees of its own: a Go package
	// compiled in one directory is compiled again in another (the
	// directory is part of its build), and Python writes bytecode beside
	// the sources a later run in the same place would read. The head
	// suite's second run is the re-run in the same worktree.
	f := newFloor(b, dir, base, headRev, lang)
	t.head = f.timed(func() { plainRun(b, f.head, lang == "python") })
	t.headAgain = f.timed(func() { plainRun(b, f.head, lang == "python") })
	t.floorFirst = newFloor(b, dir, base, headRev, lang).run(true)
	t.floorLater = newFloor(b, dir, base, headRev, lang).run(false)
	return t
}

// floor holds the four snapshots of the gate's definition as worktrees.
type floor struct {
	b                       *testing.B
	python                  bool
	base, head, before, old string
	unit                    string // the changed test file (Python) or package (Go)
	repeat                  string // the fail-to-pass test's node id (Python)
}

func newFloor(b *testing.B, repo, base, head, lang string) *floor {
	f := &floor{b: b, python: lang == "python", unit: "./p0", repeat: "tests/test_m0.py::test_abs_negative"}
	testFile := "p0/code_test.go"
	if f.python {
		f.unit, testFile = "tests/test_m0.py", "tests/test_m0.py"
	}
	tree := func(rev, take, from string) string {
		d := filepath.Join(b.TempDir(), "snap")
		floorGit(b, repo, "worktree", "add", "-q", "--detach", d, rev)
		if take != "" {
			floorGit(b, d, "checkout", from, "--", take)
		}
		return d
	}
	f.base, f.head = tree(base, "", ""), tree(head, "", "")
	f.before, f.old = tree(base, testFile, head), tree(head, testFile, base)
	return f
}

func floorGit(b *testing.B, dir string, args ...string) {
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v: %s", args, err, out)
	}
}

func (f *floor) timed(fn func()) time.Duration {
	t0 := time.Now()
	fn()
	return time.Since(t0)
}

// run is the floor of a first attempt (first) or a later one: the
// snapshot runs in the gate's order, two at a time, then Python's repeats.
// A later attempt has the same tests on the same base, so the base's run
// and the base with the head's tests, with that snapshot's repeat rounds,
// are what it stored: it runs the head, the head with the base's tests and
// the head's two repeat rounds, two at a time (all four are known to be
// needed once the stored run says which test fails on the base). Go's
// adapter does not name the files that decide its toolchain
// (verify.ToolchainFiles), so a Go gate runs the base with the head's
// tests in every attempt, and so does its floor.
func (f *floor) run(first bool) time.Duration {
	return f.timed(func() {
		if !first {
			jobs := []func(){func() { f.plain(f.head, "") }, func() { f.plain(f.old, f.unit) }}
			if f.python {
				jobs = append(jobs, func() { f.plain(f.head, f.repeat) }, func() { f.plain(f.head, f.repeat) })
			} else {
				jobs = append(jobs, func() { f.plain(f.before, f.unit) })
			}
			twoAtATime(jobs)
			return
		}
		twoAtATime([]func(){
			func() { f.plain(f.before, f.unit) }, func() { f.plain(f.head, "") },
			func() { f.plain(f.base, "") }, func() { f.plain(f.old, f.unit) },
		})
		if f.python {
			rounds := func(dir string) func() {
				return func() { f.plain(dir, f.repeat); f.plain(dir, f.repeat) }
			}
			twoAtATime([]func(){rounds(f.before), rounds(f.head)})
		}
	})
}

// plain runs target (everything when empty) in dir as plainRun does.
func (f *floor) plain(dir, target string) {
	if target == "" {
		plainRun(f.b, dir, f.python)
		return
	}
	var cmd *exec.Cmd
	if f.python {
		cmd = exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", target)
	} else {
		cmd = exec.Command("go", "test", "-count=1", "-vet=off", target)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			f.b.Fatalf("plain run of %s in %s: %v: %s", target, dir, err, out)
		}
	}
}

func twoAtATime(jobs []func()) {
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() { defer func() { <-sem; wg.Done() }(); j() }()
	}
	wg.Wait()
}

// load1 is the one-minute load average (0 where /proc/loadavg is not).
func load1() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	l, _ := strconv.ParseFloat(f[0], 64)
	return l
}
