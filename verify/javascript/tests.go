package javascript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/testlog"
)

// RunTests implements verify.Adapter: each of opts.Count rounds is one
// node --test process over the tests' files, selecting them by name, so
// every round starts fresh.
func (a *Adapter) RunTests(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	if len(tests) == 0 {
		return nil, nil
	}
	for _, t := range tests {
		if err := checkTest(t); err != nil {
			return nil, err
		}
	}
	var out []verify.TestResult
	for range max(opts.Count, 1) {
		res, err := a.runOnce(ctx, r, dir, tests, opts.Timeout)
		if err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// runOnce runs every test once and returns one result per test, in order:
// one runner process per project (a test file's nearest package.json)
// over that project's test files.
func (a *Adapter) runOnce(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, timeout time.Duration) ([]verify.TestResult, error) {
	ps, err := newProjects(dir)
	if err != nil {
		return nil, err
	}
	defer ps.Close()
	results := make([]*verify.TestResult, len(tests))
	var order []project
	groups := map[project][]int{}
	for i, t := range tests {
		f := fileOf(t)
		p := ps.of(f)
		switch fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); {
		case err != nil || fi.IsDir():
			results[i] = &verify.TestResult{Test: t, Outcome: verify.NotRun, Detail: "test file " + f + " does not exist here"}
		case !p.runsTypeScript() && isTypeScript(f):
			results[i] = &verify.TestResult{Test: t, Outcome: verify.EnvError, Detail: ErrTypeScriptRun.Error()}
		default:
			if _, ok := groups[p]; !ok {
				order = append(order, p)
			}
			groups[p] = append(groups[p], i)
		}
	}
	for _, p := range order {
		if err := a.runGroup(ctx, r, dir, p, tests, groups[p], results, timeout); err != nil {
			return nil, err
		}
	}
	out := make([]verify.TestResult, len(tests))
	for i := range tests {
		out[i] = *results[i]
	}
	return out, nil
}

// runGroup runs the tests at idx, all of project p, in one process and
// fills their results.
func (a *Adapter) runGroup(ctx context.Context, r sandbox.Runner, dir string, p project, tests []verify.Test, idx []int, results []*verify.TestResult, timeout time.Duration) error {
	var files []string
	var runnable []verify.Test
	for _, i := range idx {
		files = append(files, fileOf(tests[i]))
		runnable = append(runnable, tests[i])
	}
	slices.Sort(files)
	files = slices.Compact(files)
	pattern := namePattern(runnable)
	if p.Runner != NodeTest {
		pattern = fullNamePattern(runnable)
	}
	run, err := a.runProject(ctx, r, dir, p, files, pattern, timeout)
	if errors.Is(err, ErrNoNode) || errors.Is(err, ErrNoRunner) {
		for _, i := range idx {
			results[i] = &verify.TestResult{Test: tests[i], Outcome: verify.EnvError, Detail: err.Error()}
		}
		return nil
	}
	if err != nil {
		return err
	}
	byName, loads := index(run.records)
	for _, i := range idx {
		t := tests[i]
		var res verify.TestResult
		if rec, ok := byName[key(fileOf(t), t.Name)]; ok {
			res = rec.result(t)
		} else {
			res = run.missing(t, loads, timeout)
		}
		if run.altered != "" {
			testlog.MarkAltered(&res, run.altered)
		}
		results[i] = &res
	}
	return nil
}

// missing is the result of a test the run gave no result for: its file's
// load failure, the run's timeout, node failing before any test reported
// (an option this node does not know, a crash: EnvError), or NotRun.
func (run nodeRun) missing(t verify.Test, loads map[string]record, timeout time.Duration) verify.TestResult {
	if rec, ok := loads[fileOf(t)]; ok {
		oc, d := rec.loadFailure()
		return verify.TestResult{Test: t, Outcome: oc, Detail: d}
	}
	switch res := run.res; {
	case res.TimedOut || res.CPULimited:
		return verify.TestResult{Test: t, Outcome: verify.Timeout, Detail: fmt.Sprintf("did not finish before the %s timeout", timeout)}
	case len(run.records) == 0 && res.ExitCode != 0:
		return verify.TestResult{Test: t, Outcome: verify.EnvError, Detail: clip(fmt.Sprintf("%s exited %d without reporting a test: %s", run.runnerName(), res.ExitCode, strings.TrimSpace(string(res.Stderr)+"\n"+string(res.Stdout))))}
	}
	return verify.TestResult{Test: t, Outcome: verify.NotRun, Detail: run.runnerName() + " reported no result for this test"}
}

// runnerName names the run's runner as its users know it.
func (run nodeRun) runnerName() string {
	if run.runner == NodeTest || run.runner == "" {
		return "node --test"
	}
	return string(run.runner)
}

func key(file, name string) string { return file + "\x00" + name }

// index maps the tests' records by file and name (the last one wins: a
// name given twice is one test ID) and the load failures by file.
func index(recs []record) (tests map[string]record, loads map[string]record) {
	tests, loads = map[string]record{}, map[string]record{}
	for _, rec := range recs {
		switch {
		case rec.Load:
			loads[rec.File] = rec
		case !rec.Suite:
			tests[key(rec.File, rec.name())] = rec
		}
	}
	return tests, loads
}
