package javascript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	jsadapter "github.com/bcode-dev/bcode/verify/javascript"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// maxSource caps a changed source read (the copies' and the report's caps
// are mutate.MaxCopiedFile and mutate.MaxTestSource).
const maxSource = 4 << 20

// Mutant budget: ten times the covering tests' baseline time plus five
// seconds of CPU time (the Python engine's rule for a fresh process).
const (
	budgetFactor = 10
	budgetExtra  = 5 * time.Second
)

// jsFile is one changed JavaScript source.
type jsFile struct {
	rel     string
	src     []byte
	targets []string // the test files that import it
	tests   []string // their tests, as killerName names them
	mutants []*jsMutant
}

// jsMutant is a mutant and where its text goes.
type jsMutant struct {
	*mutate.Mutant
	file       *jsFile
	start, end int
}

// job is the JavaScript half of a mutate.Run.
type job struct {
	s       *mutate.Session
	adapter *jsadapter.Adapter
	files   []*jsFile
}

// generate reads the changed files and finds their mutants.
func (j *job) generate(changed []verify.FileChange) error {
	rep := j.s.Report
	for _, fc := range changed {
		src, err := mutate.ReadBeneath(j.s.Root, filepath.Join(j.s.Root, filepath.FromSlash(fc.Path)), maxSource)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", fc.Path, err))
			continue
		}
		if typeScriptExts[path.Ext(fc.Path)] {
			if runs, runner := j.adapter.RunsTypeScript(j.s.Root, fc.Path); !runs {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: not mutated: its project's runner (%s) runs no TypeScript", fc.Path, runner))
				continue
			}
		}
		found, notes, err := sites(fc.Path, src, fc.Changed)
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
			continue
		}
		rep.Notes = append(rep.Notes, notes...)
		f := &jsFile{rel: fc.Path, src: src}
		lines := lineStarts(src)
		seen := mutate.IDs{}
		for _, st := range found {
			m := &mutate.Mutant{File: f.rel, Func: st.fn, Operator: st.op, Original: st.original, Mutated: st.mutated}
			m.Line, m.Col = position(lines, st.start)
			m.EndLine, m.EndCol = position(lines, st.end)
			seen.Assign(m)
			rep.Stats.Generated++
			f.mutants = append(f.mutants, &jsMutant{Mutant: m, file: f, start: st.start, end: st.end})
		}
		if len(f.mutants) > 0 {
			j.files = append(j.files, f)
		}
	}
	return nil
}

// Finish implements mutate.Job: the covering tests' baseline on the
// unmutated head, then every mutant against its file's test files.
func (j *job) Finish() error {
	if len(j.files) == 0 {
		return nil
	}
	defer j.report()
	union, err := j.targets()
	if err != nil {
		return err
	}
	var live []*jsMutant
	for _, f := range j.files {
		for _, m := range f.mutants {
			if len(f.targets) == 0 {
				m.Verdict, m.Detail = mutate.NotCovered, "no test file imports "+f.rel
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
	for _, m := range live {
		m.Tests = m.file.tests
	}
	cpu, wall := mutate.Budget(budgetFactor*base+budgetExtra, j.s.Options.RunTimeout)
	j.s.Progress.Step("running %d JavaScript mutants on %d workers", len(live), workers)
	t0 := time.Now()
	mutate.OnWorkers(dirs, len(live), func(i int, d string) { j.runMutant(d, live[i], cpu, wall) })
	j.s.Report.Stats.Run += time.Since(t0)
	return j.s.Ctx.Err()
}

// targets finds each file's test files (verify/javascript's Targets, one
// changed file at a time) and returns their union, sorted.
func (j *job) targets() ([]string, error) {
	all := map[string]bool{}
	for _, f := range j.files {
		ch := &verify.Change{Base: j.s.Change.Base, Head: j.s.Change.Head, Files: []verify.FileChange{{Path: f.rel, Status: verify.Modified}}}
		ts, err := j.adapter.Targets(j.s.Ctx, j.s.Runner, j.s.Root, ch)
		if err != nil {
			return nil, fmt.Errorf("mutate: javascript tests of %s: %w", f.rel, err)
		}
		f.targets = ts
		for _, t := range ts {
			all[t] = true
		}
	}
	out := make([]string, 0, len(all))
	for t := range all {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

// baseline runs the covering test files on the unmutated head in dir and
// returns the time they took; a failing one makes the baseline red.
func (j *job) baseline(dir string, files []string) (time.Duration, error) {
	j.s.Progress.Step("JavaScript baseline: running %d test files once", len(files))
	sr, t0, err := mutate.RunSuiteBaseline("the javascript baseline of "+strings.Join(files, ", "), func(deadline time.Duration) (verify.SuiteResult, error) {
		return j.adapter.RunSuite(j.s.Ctx, j.s.Runner, dir, files, deadline)
	})
	var te *mutate.TimeoutError
	if errors.As(err, &te) {
		return 0, err
	}
	if err := j.s.Ctx.Err(); err != nil {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("mutate: javascript baseline: %w", err)
	}
	if sr.Outcome != verify.Pass {
		return 0, &mutate.BaselineError{Package: "javascript tests " + strings.Join(files, ", "), Failed: sr.Failed, Detail: sr.Detail}
	}
	byFile := map[string][]string{}
	for _, r := range sr.Results {
		if r.Outcome == verify.Pass {
			byFile[r.Test.File] = append(byFile[r.Test.File], killerName(r.Test))
		}
	}
	for _, f := range j.files {
		for _, t := range f.targets {
			f.tests = append(f.tests, byFile[t]...)
		}
	}
	j.s.Report.Stats.Packages++ // the JavaScript suite: one baseline
	j.s.Report.Stats.Baseline += time.Since(t0)
	return sr.Duration, nil
}

// runMutant writes m into dir, the worker's copy of the snapshot, runs its
// file's test files there and puts the original back.
func (j *job) runMutant(dir string, m *jsMutant, cpu, wall time.Duration) {
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
	r := budgeted{Runner: j.s.Runner, cpu: cpu, wall: wall}
	sr, err := j.adapter.RunSuite(j.s.Ctx, r, dir, m.file.targets, cpu)
	j.judge(m, sr, err, r)
}

// judge gives m its verdict from its run: a test that failed kills it (a
// change's own test first), one that ran out of time or a run the kernel
// or node stopped for its budget is a timeout, and a test process that
// died with no test failing is no verdict: a crash is not a test noticing.
func (j *job) judge(m *jsMutant, sr verify.SuiteResult, err error, r budgeted) {
	if err != nil {
		m.Verdict, m.Detail = mutate.NoVerdict, "the runner failed: "+err.Error()
		if j.s.Ctx.Err() != nil {
			m.Detail = "the run was cancelled"
		}
		return
	}
	if killer := j.killer(sr); killer != "" {
		m.Verdict, m.KilledBy = mutate.Killed, killer
		return
	}
	timedOut := sr.Outcome == verify.Timeout
	for _, res := range sr.Results {
		timedOut = timedOut || res.Outcome == verify.Timeout
	}
	for _, u := range sr.Units {
		timedOut = timedOut || u.Outcome == verify.Timeout
	}
	switch {
	case timedOut:
		m.Verdict = mutate.Timeout
		m.Detail = fmt.Sprintf("the covering tests did not finish within %s (%dx their baseline time + %s)", r.cpu.Round(time.Millisecond), budgetFactor, budgetExtra)
	case sr.Outcome == verify.Pass:
		m.Verdict = mutate.Survived
	default:
		m.Verdict, m.Detail = mutate.NoVerdict, "the test process died: "+firstLine(sr.Detail)
	}
}

// killer is the failed test that kills a mutant: the first of the
// change's own tests that failed, else the first that failed.
func (j *job) killer(sr verify.SuiteResult) string {
	preferred := map[string]bool{}
	for _, t := range j.s.Options.Tests {
		if t.Language == language {
			preferred[killerName(t)] = true
		}
	}
	first := ""
	for _, res := range sr.Results {
		if res.Outcome != verify.Fail {
			continue
		}
		name := killerName(res.Test)
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
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// budgeted gives every command the mutant's CPU limit and wall-clock
// backstop (mutate.Budget) in place of the adapter's own.
type budgeted struct {
	sandbox.Runner
	cpu, wall time.Duration
}

func (b budgeted) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	cmd.CPULimit, cmd.Timeout = b.cpu, b.wall
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
// its worker's copy; node resolves links to their targets, so a linked
// file would import the unmutated sources). .git is left out and
// node_modules linked: installed packages are not the change's.
func (j *job) copies(n int) ([]string, error) {
	var out []string
	for w := 0; w < n; w++ {
		dir := filepath.Join(j.s.TempDir, "js", "w"+strconv.Itoa(w))
		if err := copyTree(j.s.Root, dir); err != nil {
			return nil, fmt.Errorf("mutate: copying the snapshot for a javascript worker: %w", err)
		}
		out = append(out, dir)
	}
	return out, nil
}

func copyTree(root, dst string) error {
	return mutate.CopyTree(root, dst, func(name string) (bool, bool) { return name == "node_modules", false })
}
