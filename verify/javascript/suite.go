package javascript

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// skipDir reports directories that hold no tests of the repository: other
// people's packages, build output, hidden directories (bcode's scratch).
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "dist" || name == "build" || name == "coverage"
}

// jsFiles lists the files this adapter owns below dir (slash-separated,
// relative, sorted), without following symbolic links.
func (a *Adapter) jsFiles(dir string) ([]string, error) {
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	var out []string
	err = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // an unreadable corner is not the whole tree
		}
		if d.IsDir() {
			if p != "." && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && a.Owns(p) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// RunSuite implements verify.Adapter: one node --test process over the
// target test files, or every JavaScript test file when targets is nil.
// TypeScript test files are left out (node does not run them yet) and
// named in the detail.
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
	var run, ts []string
	for _, t := range targets {
		if err := checkTest(verify.Test{File: t, Name: "suite"}); err != nil {
			return verify.SuiteResult{}, fmt.Errorf("suite target %q: %w", t, err)
		}
		if isTypeScript(t) {
			ts = append(ts, t)
		} else {
			run = append(run, t)
		}
	}
	if len(targets) == 0 {
		out.Outcome, out.Targets = verify.Pass, nil
		return out, nil
	}
	out.Outcome = verify.Pass
	if len(run) > 0 {
		nr, err := a.runNode(ctx, r, dir, run, "", timeout)
		switch {
		case errors.Is(err, ErrNoNode):
			out.Outcome, out.Detail = verify.EnvError, err.Error()
		case err != nil:
			return verify.SuiteResult{}, err
		default:
			judgeSuite(&out, nr, run, timeout)
		}
	}
	if len(ts) > 0 {
		// Said after what the run found, which matters more.
		note := fmt.Sprintf("%s: %s", ErrTypeScriptRun, strings.Join(ts, ", "))
		out.Detail = strings.TrimPrefix(out.Detail+"; "+note, "; ")
	}
	out.Duration = time.Since(start)
	return out, nil
}

// judgeSuite fills a suite result from one run over files.
func judgeSuite(out *verify.SuiteResult, nr nodeRun, files []string, timeout time.Duration) {
	_, loads := index(nr.records)
	for _, rec := range nr.records {
		if rec.Load {
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
		out.Results = append(out.Results, res)
		if res.Outcome == verify.Fail || res.Outcome == verify.Timeout {
			out.Failed = append(out.Failed, rec.File+":"+t.Name)
			if out.Detail == "" {
				out.Detail = res.Detail
			}
		}
	}
	timedOut := nr.res.TimedOut || nr.res.CPULimited
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
		out.Units = append(out.Units, u)
	}
	switch {
	case timedOut:
		out.Outcome, out.Detail = verify.Timeout, fmt.Sprintf("the suite did not finish before the %s timeout", timeout)
	case len(out.Failed) > 0:
		out.Outcome = verify.Fail
	case nr.res.ExitCode != 0:
		out.Outcome = verify.EnvError
		out.Detail = clip(strings.TrimSpace(string(nr.res.Stderr) + "\n" + string(nr.res.Stdout)))
	default:
		out.Outcome = verify.Pass
	}
}
