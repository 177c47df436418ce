package javascript

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/testlog"
)

// skipDir reports directories that hold no tests of the repository: other
// people's packages, build output, hidden directories (bcode's scratch).
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "dist" || name == "build" || name == "coverage"
}

// jsFiles lists the files this adapter owns below dir (slash-separated,
// relative, sorted), without following symbolic links.
func (a *Adapter) jsFiles(dir string) ([]string, error) {
	return sandbox.ListFiles(dir, skipDir, a.Owns)
}

// RunSuite implements verify.Adapter: one runner process per project (a
// test file's nearest package.json) over its target test files, or over
// every test file when targets is nil. TypeScript test files a project's
// runner does not run (node --test without tsx) are left out and named in
// the detail.
func (a *Adapter) RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (verify.SuiteResult, error) {
	start := time.Now()
	out := verify.SuiteResult{Targets: targets}
	if targets == nil {
		files, err := a.jsFiles(dir)
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("listing javascript files in %s: %w", dir, err)
		}
		for _, f := range files {
			if a.IsTestFile(f) {
				targets = append(targets, f)
			}
		}
	}
	if len(targets) == 0 {
		out.Outcome, out.Targets = verify.Pass, nil
		return out, nil
	}
	ps, err := newProjects(dir)
	if err != nil {
		return verify.SuiteResult{}, err
	}
	defer ps.Close()
	var order []project
	groups := map[project][]string{}
	var ts []string
	for _, t := range targets {
		if err := checkTest(verify.Test{File: t, Name: "suite"}); err != nil {
			return verify.SuiteResult{}, fmt.Errorf("suite target %q: %w", t, err)
		}
		p := ps.of(t)
		if isTypeScript(t) && !p.runsTypeScript() {
			ts = append(ts, t)
			continue
		}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], t)
	}
	out.Outcome = verify.Pass
	for _, p := range order {
		part := verify.SuiteResult{Outcome: verify.Pass}
		nr, err := a.runProject(ctx, r, dir, p, groups[p], "", timeout)
		switch {
		case errors.Is(err, ErrNoNode) || errors.Is(err, ErrNoRunner):
			part.Outcome, part.Detail = verify.EnvError, err.Error()
		case err != nil:
			return verify.SuiteResult{}, err
		default:
			judgeSuite(&part, nr, groups[p], timeout)
		}
		mergeSuite(&out, part)
	}
	if len(ts) > 0 {
		// Said after what the run found, which matters more.
		note := fmt.Sprintf("%s: %s", ErrTypeScriptRun, strings.Join(ts, ", "))
		out.Detail = strings.TrimPrefix(out.Detail+"; "+note, "; ")
	}
	out.Duration = time.Since(start)
	return out, nil
}

// suiteRank orders suite outcomes by how much they say: the worst
// project's outcome is the suite's.
var suiteRank = map[verify.Outcome]int{verify.Pass: 0, verify.EnvError: 1, verify.Fail: 2, verify.Timeout: 3}

// mergeSuite adds one project's run to the suite's result.
func mergeSuite(out *verify.SuiteResult, part verify.SuiteResult) {
	out.Results = append(out.Results, part.Results...)
	out.Units = append(out.Units, part.Units...)
	out.Failed = append(out.Failed, part.Failed...)
	if suiteRank[part.Outcome] > suiteRank[out.Outcome] {
		out.Outcome = part.Outcome
	}
	if out.Detail == "" {
		out.Detail = part.Detail
	}
}

// judgeSuite fills a suite result from one run over files.
func judgeSuite(out *verify.SuiteResult, nr nodeRun, files []string, timeout time.Duration) {
	_, loads := index(nr.records)
	for _, rec := range nr.records {
		if rec.Load {
			if rec.File == "" { // an error outside every test and file
				out.Failed = append(out.Failed, "(unhandled error)")
				if out.Detail == "" {
					out.Detail = clip(rec.Error)
				}
			}
			continue
		}
		if rec.Suite {
			// A suite fails of its own when its body or a hook throws;
			// its tests' failures are theirs.
			if rec.Outcome == "fail" && rec.Failure != "subtestsFailed" {
				out.Failed = append(out.Failed, rec.File+":"+rec.name())
			}
			continue
		}
		t := verify.Test{Language: language, Package: rec.File, File: rec.File, Name: rec.name()}
		res := rec.result(t)
		if nr.altered != "" {
			testlog.MarkAltered(&res, nr.altered)
		}
		out.Results = append(out.Results, res)
		if res.Outcome == verify.Fail || res.Outcome == verify.Timeout {
			out.Failed = append(out.Failed, rec.File+":"+t.Name)
			if out.Detail == "" {
				out.Detail = res.Detail
			}
		}
	}
	timedOut := nr.res.TimedOut || nr.res.CPULimited
	fileTimedOut := false
	ran := map[string]bool{}
	for _, r := range out.Results {
		ran[r.Test.File] = true
	}
	for _, f := range files {
		u := verify.UnitResult{Unit: f, Outcome: verify.Pass}
		if rec, ok := loads[f]; ok {
			// A file whose process failed after its tests reported (an
			// uncaught error once they finished) ran them: the unit
			// passes, the suite fails.
			if !ran[f] {
				u.Outcome, u.Detail = rec.loadFailure()
			}
			out.Failed = append(out.Failed, f)
			if out.Detail == "" {
				_, out.Detail = rec.loadFailure()
			}
		} else if timedOut {
			u.Outcome = verify.Timeout
		}
		fileTimedOut = fileTimedOut || u.Outcome == verify.Timeout
		out.Units = append(out.Units, u)
	}
	switch {
	case timedOut:
		out.Outcome, out.Detail = verify.Timeout, fmt.Sprintf("the suite did not finish before the %s timeout", timeout)
	case fileTimedOut:
		// A file's process the CPU limit ended (record.timedOut).
		out.Outcome = verify.Timeout
	case len(out.Failed) > 0:
		out.Outcome = verify.Fail
	case nr.res.ExitCode != 0 && !(nr.runner == Vitest && len(nr.records) > 0):
		// vitest's exit code also counts the files its filters add
		// (onlyFiles); its records say what failed among the targets.
		out.Outcome = verify.EnvError
		out.Detail = clip(strings.TrimSpace(string(nr.res.Stderr) + "\n" + string(nr.res.Stdout)))
	default:
		out.Outcome = verify.Pass
	}
}
