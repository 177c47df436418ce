package rust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	rustadapter "github.com/bcode-dev/bcode/verify/rust"
)

// Mutant budget: ten times the covering tests' baseline time plus five
// seconds (the other engines' rule). The baseline's time includes the
// crate's first build, which a mutant's build repeats in part.
const (
	budgetFactor = 10
	budgetExtra  = 5 * time.Second
)

// job is the Rust half of a mutate.Run.
type job struct {
	s       *mutate.Session
	adapter *rustadapter.Adapter
	files   []*rsFile
}

// Finish implements mutate.Job: the reached targets' baseline on the
// unmutated head, then every mutant against its file's tests.
func (j *job) Finish() error {
	if len(j.files) == 0 {
		return nil
	}
	defer j.report()
	union, err := j.targets()
	if err != nil {
		return err
	}
	var live []*rsMutant
	for _, f := range j.files {
		for _, m := range f.mutants {
			if len(f.units) == 0 {
				m.Verdict, m.Detail = mutate.NotCovered, "no test target reaches "+f.rel
				continue
			}
			live = append(live, m)
		}
	}
	if len(live) == 0 {
		return nil
	}
	workers := min(j.s.Options.Workers, len(live))
	dirs, err := j.copies(workers)
	if err != nil {
		return err
	}
	base, err := j.baseline(dirs[0], union)
	if err != nil {
		return err
	}
	var runnable []*rsMutant
	for _, m := range live {
		m.Tests = names(m.file.tests)
		if len(m.file.tests) == 0 {
			m.Verdict, m.Detail = mutate.NotCovered, "no test of the targets that reach "+m.file.rel+" passed on the head"
			continue
		}
		runnable = append(runnable, m)
	}
	if err := j.seedTargets(dirs); err != nil {
		return err
	}
	cpu, wall := mutate.Budget(budgetFactor*base+budgetExtra, j.s.Options.RunTimeout)
	j.s.Progress.Step("running %d Rust mutants on %d workers", len(runnable), workers)
	t0 := time.Now()
	mutate.OnWorkers(dirs, len(runnable), func(i int, d string) { j.runMutant(d, runnable[i], cpu, wall) })
	j.s.Report.Stats.Run += time.Since(t0)
	return j.s.Ctx.Err()
}

func names(ts []verify.Test) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = killerName(t)
	}
	return out
}

// targets finds each file's test targets (verify/rust's Targets, one
// changed file at a time) and returns their union, sorted.
func (j *job) targets() ([]string, error) {
	all := map[string]bool{}
	for _, f := range j.files {
		ch := &verify.Change{Base: j.s.Change.Base, Head: j.s.Change.Head, Files: []verify.FileChange{{Path: f.rel, Status: verify.Modified}}}
		units, err := j.adapter.Targets(j.s.Ctx, j.s.Runner, j.s.Root, ch)
		if err != nil {
			return nil, fmt.Errorf("mutate: rust targets of %s: %w", f.rel, err)
		}
		f.units = units
		for _, u := range units {
			all[u] = true
		}
	}
	out := make([]string, 0, len(all))
	for u := range all {
		out = append(out, u)
	}
	sort.Strings(out)
	return out, nil
}

// baseline builds and runs the reached targets on the unmutated head in
// dir and returns the time that took; a failing test makes it red.
func (j *job) baseline(dir string, units []string) (time.Duration, error) {
	j.s.Progress.Step("Rust baseline: building and running %d test targets once", len(units))
	sr, t0, err := mutate.RunSuiteBaseline("the rust baseline of "+strings.Join(units, ", "), func(deadline time.Duration) (verify.SuiteResult, error) {
		return j.adapter.RunSuite(j.s.Ctx, j.s.Runner, dir, units, deadline)
	})
	var te *mutate.TimeoutError
	if errors.As(err, &te) {
		return 0, err
	}
	if err := j.s.Ctx.Err(); err != nil {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("mutate: rust baseline: %w", err)
	}
	if sr.Outcome != verify.Pass {
		return 0, &mutate.BaselineError{Package: "rust targets " + fmt.Sprint(units), Failed: sr.Failed, Detail: sr.Detail}
	}
	byUnit := map[string][]verify.Test{}
	for _, r := range sr.Results {
		if r.Outcome == verify.Pass {
			byUnit[r.Test.Package] = append(byUnit[r.Test.Package], r.Test)
		}
	}
	for _, f := range j.files {
		for _, u := range f.units {
			f.tests = append(f.tests, byUnit[u]...)
		}
	}
	j.s.Report.Stats.Packages++
	j.s.Report.Stats.Baseline += time.Since(t0)
	return time.Since(t0), nil
}

// runMutant writes m into dir, the worker's copy of the snapshot, runs its
// file's tests there and puts the original back.
func (j *job) runMutant(dir string, m *rsMutant, cpu, wall time.Duration) {
	start := time.Now()
	defer func() { m.Duration = time.Since(start) }()
	if j.s.Ctx.Err() != nil {
		m.Verdict, m.Detail = mutate.NoVerdict, "the run was cancelled"
		return
	}
	target := filepath.Join(dir, filepath.FromSlash(m.file.rel))
	src := m.file.src
	mutated := append(append(append([]byte(nil), src[:m.start]...), m.Mutated...), src[m.end:]...)
	if err := os.WriteFile(target, mutated, 0o644); err != nil {
		m.Verdict, m.Detail = mutate.NoVerdict, "writing the mutant: "+err.Error()
		return
	}
	defer os.WriteFile(target, src, 0o644)
	r := budgeted{Runner: j.s.Runner, wall: wall}
	res, err := j.adapter.RunTests(j.s.Ctx, r, dir, m.file.tests, verify.RunOptions{Count: 1, Timeout: cpu})
	j.judge(m, res, err, cpu)
}

// judge gives m its verdict from its tests' results: a failed test kills
// it (a change's own test first), a mutant that does not compile is
// unviable, a test stopped at the budget is a timeout, and a test binary
// that ended with no test failing is no verdict: a crash is not a test
// noticing.
func (j *job) judge(m *rsMutant, res []verify.TestResult, err error, cpu time.Duration) {
	if err != nil {
		m.Verdict, m.Detail = mutate.NoVerdict, "the runner failed: "+err.Error()
		if j.s.Ctx.Err() != nil {
			m.Detail = "the run was cancelled"
		}
		return
	}
	if killer := j.killer(res); killer != "" {
		m.Verdict, m.KilledBy = mutate.Killed, killer
		return
	}
	worst := verify.Pass
	detail := ""
	for _, r := range res {
		if r.Outcome != verify.Pass && worst == verify.Pass {
			worst, detail = r.Outcome, r.Detail
		}
		if r.Outcome == verify.BuildError || r.Outcome == verify.Timeout {
			worst, detail = r.Outcome, r.Detail
			break
		}
	}
	switch worst {
	case verify.Pass:
		m.Verdict = mutate.Survived
	case verify.BuildError:
		m.Verdict, m.Detail = mutate.Unviable, "the mutant does not compile: "+firstLine(detail)
	case verify.Timeout:
		m.Verdict = mutate.Timeout
		m.Detail = fmt.Sprintf("the covering tests did not finish within %s (%dx their baseline time + %s)", cpu.Round(time.Millisecond), budgetFactor, budgetExtra)
	default:
		m.Verdict, m.Detail = mutate.NoVerdict, "the test binary died: "+firstLine(detail)
	}
}

// killer is the failed test that kills a mutant: the first of the
// change's own tests that failed, else the first that failed.
func (j *job) killer(res []verify.TestResult) string {
	preferred := map[string]bool{}
	for _, t := range j.s.Options.Tests {
		if t.Language == language {
			preferred[killerName(t)] = true
		}
	}
	first := ""
	for _, r := range res {
		if r.Outcome != verify.Fail {
			continue
		}
		name := killerName(r.Test)
		if preferred[name] {
			return name
		}
		if first == "" {
			first = name
		}
	}
	return first
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// budgeted gives every command the mutant's wall-clock backstop in place
// of the adapter's own; the adapter sets the test binary's CPU limit.
type budgeted struct {
	sandbox.Runner
	wall time.Duration
}

func (b budgeted) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	if cmd.Timeout <= 0 || cmd.Timeout > b.wall {
		cmd.Timeout = b.wall
	}
	return b.Runner.Run(ctx, cmd)
}

// report adds the mutants, their sources and their tests' files to the
// run's report.
func (j *job) report() {
	for _, f := range j.files {
		ms := make([]*mutate.Mutant, len(f.mutants))
		for i, m := range f.mutants {
			ms[i] = m.Mutant
		}
		j.s.Record(f.rel, f.src, ms, testFile)
	}
}

// copies makes n copies of the snapshot below the run's scratch
// directory, one per worker, each file copied (a mutant is written into
// its worker's copy). .git and cargo's output are left out.
func (j *job) copies(n int) ([]string, error) {
	var out []string
	for w := 0; w < n; w++ {
		dir := filepath.Join(j.s.TempDir, "rust", "w"+strconv.Itoa(w))
		if err := copyTree(j.s.Root, dir); err != nil {
			return nil, fmt.Errorf("mutate: copying the snapshot for a rust worker: %w", err)
		}
		out = append(out, dir)
	}
	return out, nil
}

func copyTree(root, dst string) error {
	return mutate.CopyTree(root, dst, func(name string) (bool, bool) { return false, name == rustadapter.TargetDirName })
}

// seedTargets copies the baseline's build output (worker 0's) into every
// other worker's copy, so each builds only what a mutant changes instead
// of every dependency again. The output is cargo's, in the run's own
// scratch directory: links are copied as links, never followed.
func (j *job) seedTargets(dirs []string) error {
	from := filepath.Join(dirs[0], rustadapter.TargetDirName)
	if _, err := os.Lstat(from); err != nil {
		return nil // nothing was built: each worker builds its own
	}
	for _, d := range dirs[1:] {
		if err := copyOutput(from, filepath.Join(d, rustadapter.TargetDirName)); err != nil {
			return fmt.Errorf("mutate: copying the rust build output for a worker: %w", err)
		}
	}
	return nil
}

func copyOutput(from, to string) error {
	conf, err := sandbox.OpenConfined(from)
	if err != nil {
		return err
	}
	defer conf.Close()
	return conf.WalkDir(".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(to, filepath.FromSlash(rel))
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := conf.Readlink(rel)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case d.Type().IsRegular():
			return copyFile(conf, rel, dst)
		}
		return nil
	})
}

func copyFile(conf *sandbox.Confined, rel, to string) error {
	in, err := conf.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(to, fi.Mode().Perm())
}
