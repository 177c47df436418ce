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

// runOnce runs every test once and returns one result per test, in order.
func (a *Adapter) runOnce(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, timeout time.Duration) ([]verify.TestResult, error) {
	results := make([]*verify.TestResult, len(tests))
	var files []string
	var runnable []verify.Test
	for i, t := range tests {
		f := fileOf(t)
		switch fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); {
		case err != nil || fi.IsDir():
			results[i] = &verify.TestResult{Test: t, Outcome: verify.NotRun, Detail: "test file " + f + " does not exist here"}
		case isTypeScript(f):
			results[i] = &verify.TestResult{Test: t, Outcome: verify.EnvError, Detail: ErrTypeScriptRun.Error()}
		default:
			files = append(files, f)
			runnable = append(runnable, t)
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	var run nodeRun
	if len(files) > 0 {
		var err error
		run, err = a.runNode(ctx, r, dir, files, namePattern(runnable), timeout)
		if errors.Is(err, ErrNoNode) {
			for i, t := range tests {
				if results[i] == nil {
					results[i] = &verify.TestResult{Test: t, Outcome: verify.EnvError, Detail: err.Error()}
				}
			}
		} else if err != nil {
			return nil, err
		}
	}
	byName, loads := index(run.records)
	out := make([]verify.TestResult, len(tests))
	for i, t := range tests {
		switch rec, ok := byName[key(fileOf(t), t.Name)]; {
		case results[i] != nil:
			out[i] = *results[i]
		case ok:
			out[i] = rec.result(t)
		default:
			out[i] = run.missing(t, loads, timeout)
		}
	}
	return out, nil
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
		return verify.TestResult{Test: t, Outcome: verify.EnvError, Detail: clip(fmt.Sprintf("node --test exited %d without reporting a test: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr))))}
	}
	return verify.TestResult{Test: t, Outcome: verify.NotRun, Detail: "node reported no result for this test"}
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
