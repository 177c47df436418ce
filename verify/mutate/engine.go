package mutate

import (
	"context"
	"errors"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// Engine is one language's mutation engine: it makes the mutants of the
// changed lines of its files, runs each against the tests that cover it
// within a budget of its own, and adds them, with their verdicts, to the
// run's report. verify/mutate/golang and verify/mutate/python are the two;
// the composer that picks them (engine/check) passes them in
// Options.Engines, as verify/mutate may not import them. Every engine
// passes the conformance suite in verify/mutate/mutatetest.
type Engine interface {
	// Language names the engine's language as tests and reports do
	// ("go", "python").
	Language() string
	// Mutable reports whether the engine makes mutants of the file at p
	// (repository-relative, slash-separated): its non-test sources.
	Mutable(p string) bool
	// KillerName is the name a mutant's KilledBy carries when t, a test of
	// the engine's language, killed it: how the gate knows a kill was a
	// credited test's.
	KillerName(t verify.Test) string
	// Prepare starts the engine's run on the changed files s gives it
	// (Session.Files): it may read, generate and build, but runs none of
	// the repository's tests unless Options.Reach needs them to pick lines,
	// so the gate can prepare beside its own runs. Its error ends the run.
	Prepare(s *Session) (Job, error)
}

// Job is one engine's prepared run.
type Job interface {
	// Finish runs what is left (baselines, mutants) against the covering
	// tests, preferring Session.Options.Tests as killers, and adds every
	// mutant to Session.Report. The error is for failures that leave no
	// meaningful report: a red baseline, a missing toolchain, cancellation.
	Finish() error
}

// Session is one Run as an engine sees it: where the head is, the
// change, the options and the report the engines add to. The engines of a
// run prepare and finish one after another, never at once, so the report
// needs no lock.
type Session struct {
	Ctx      context.Context
	Runner   sandbox.Runner
	Root     string // the head snapshot, absolute
	Change   *verify.Change
	Options  Options // with the defaults filled in
	Progress verify.Progress
	Report   *Report
	// TempDir is the run's own scratch directory (below Options.TempDir),
	// removed when the run ends: test binaries, overlays, profiles.
	TempDir string
}

// Files are the change's files e mutates: Mutable ones that still exist,
// are text, have changed lines and are among Options.Files when it is set.
func (s *Session) Files(e Engine) []verify.FileChange {
	var out []verify.FileChange
	for _, f := range s.Change.Files {
		if f.Status == verify.Deleted || f.Binary || len(f.Changed) == 0 || !e.Mutable(f.Path) || !s.Wanted(f.Path) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// Wanted applies Options.Files to the file at p.
func (s *Session) Wanted(p string) bool {
	if len(s.Options.Files) == 0 {
		return true
	}
	for _, f := range s.Options.Files {
		if path.Clean(filepath.ToSlash(f)) == p {
			return true
		}
	}
	return false
}

// ErrNoEngines reports a run given no engine: a surface that did not take
// the composer's (engine/check's) options.
var ErrNoEngines = errors.New("mutate: no mutation engines given")

// EngineFor is the engine of engines that mutates the file at p, or nil.
func EngineFor(engines []Engine, p string) Engine {
	for _, e := range engines {
		if e.Mutable(p) {
			return e
		}
	}
	return nil
}

// Budget is a mutant run's budget from cpu, the CPU time its engine allows
// it (what the kernel enforces, sandbox.Command.CPULimit), and its
// wall-clock backstop, which only ends a run that waits instead of
// working: five times cpu plus 30 s for a container's start. limit, when
// set, is the user's run_timeout: it caps both, so it is a wall-clock cap
// a busy machine can reach first (the default budget does not change with
// load).
func Budget(cpu, limit time.Duration) (time.Duration, time.Duration) {
	if limit > 0 && cpu > limit {
		cpu = limit
	}
	wall := 5*cpu + 30*time.Second
	if limit > 0 && wall > limit {
		wall = limit
	}
	return cpu, wall
}

// BaselineFloor is the least deadline of one baseline test run, before
// the load stretches it (sandbox.Load.Deadline): the baseline is the first
// run of its tests the evidence measures, so it has only what the caller
// measured (0: nothing) to derive its deadline from.
const BaselineFloor = 5 * time.Minute

// BaselineDeadline is the deadline of one baseline run whose tests took
// measured in a run already made (0: none), on the machine as loaded now.
func BaselineDeadline(measured time.Duration) time.Duration {
	return sandbox.ReadLoad().Deadline(BaselineFloor, measured)
}

// ErrTimedOut is in the chain of every TimeoutError.
var ErrTimedOut = errors.New("mutate: timed out")

// TimeoutError is a baseline run that did not finish within its deadline,
// nor within the longer one of its retry: what the evidence could not
// establish, never a red baseline.
type TimeoutError struct {
	Run          string
	First, Retry time.Duration
	Load         sandbox.Load
}

func (e *TimeoutError) Error() string {
	return verify.TimeoutDetail(e.Run, e.First, e.Retry, e.Load)
}

func (e *TimeoutError) Is(target error) bool { return target == ErrTimedOut }

// RunBaseline runs cmd, a baseline run named run, with BaselineDeadline
// (measured as there), and once more with the load's retry deadline if
// it times out or its output does not close after it ended (a process it
// left behind holds the pipe: exec's WaitDelay, which a loaded machine
// reaches too). A second such end is a TimeoutError.
func RunBaseline(ctx context.Context, r sandbox.Runner, run string, cmd sandbox.Command, measured time.Duration) (sandbox.Result, error) {
	first := BaselineDeadline(measured)
	cmd.Timeout = first
	res, err := r.Run(ctx, cmd)
	if !TimedOut(res, err) || ctx.Err() != nil {
		return res, err
	}
	l := sandbox.ReadLoad()
	cmd.Timeout = l.RetryDeadline(first, BaselineFloor, measured)
	res, err = r.Run(ctx, cmd)
	if TimedOut(res, err) && ctx.Err() == nil {
		return res, &TimeoutError{Run: run, First: first, Retry: cmd.Timeout, Load: l}
	}
	return res, err
}

// TimedOut reports a run that ended at its deadline, or whose output did
// not close within exec's WaitDelay after it ended: both are the
// deadline's doing, retried once, and never a red baseline.
func TimedOut(res sandbox.Result, err error) bool {
	return res.TimedOut || errors.Is(err, exec.ErrWaitDelay)
}

// Parallel runs f(0..n-1) on at most workers goroutines.
func Parallel(workers, n int, f func(i int)) {
	if workers < 1 {
		workers = 1
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers && w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// RunSuiteBaseline is RunBaseline for an engine whose baseline is an
// adapter's suite run: suite runs with BaselineDeadline, and once more
// with the load's retry deadline if its outcome is a timeout; a second
// timeout is a TimeoutError naming run. It returns the last run's result
// and when that run started.
func RunSuiteBaseline(run string, suite func(deadline time.Duration) (verify.SuiteResult, error)) (verify.SuiteResult, time.Time, error) {
	first := BaselineDeadline(0)
	t0 := time.Now()
	sr, err := suite(first)
	if err != nil || sr.Outcome != verify.Timeout {
		return sr, t0, err
	}
	l := sandbox.ReadLoad()
	retry := l.RetryDeadline(first, BaselineFloor, 0)
	t0 = time.Now()
	sr, err = suite(retry)
	if err == nil && sr.Outcome == verify.Timeout {
		return sr, t0, &TimeoutError{Run: run, First: first, Retry: retry, Load: l}
	}
	return sr, t0, err
}

// OnWorkers runs f(i, dir) for i in 0..n-1, each call holding one of dirs
// (a worker's own copy of the snapshot) alone, at most len(dirs) at once.
func OnWorkers(dirs []string, n int, f func(i int, dir string)) {
	free := make(chan string, len(dirs))
	for _, d := range dirs {
		free <- d
	}
	Parallel(len(dirs), n, func(i int) {
		d := <-free
		defer func() { free <- d }()
		f(i, d)
	})
}
