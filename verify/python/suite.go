package python

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

// skipDirs are directories pytest does not collect from by default
// (norecursedirs) plus environments that hold other people's tests.
var skipDirs = map[string]bool{
	"node_modules": true, "venv": true, "build": true, "dist": true, "CVS": true, "_darcs": true,
	"{arch}": true, "__pycache__": true, "site-packages": true,
}

func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || skipDirs[name] || strings.HasSuffix(name, ".egg")
}

// pyFiles lists the Python files below dir (slash-separated, relative,
// sorted), without following symbolic links or entering skipped
// directories.
func pyFiles(dir string) ([]string, error) {
	return sandbox.ListFiles(dir, skipDir, func(p string) bool { return strings.HasSuffix(p, ".py") })
}

// RunSuite implements verify.Adapter: pytest on targets (test files or
// node ids), or on everything when targets is nil.
func (a *Adapter) RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (verify.SuiteResult, error) {
	start := time.Now()
	out := verify.SuiteResult{Targets: targets}
	files, err := pyFiles(dir)
	if err != nil {
		return verify.SuiteResult{}, fmt.Errorf("listing python files in %s: %w", dir, err)
	}
	var tests []string
	for _, f := range files {
		if a.IsTestFile(f) {
			tests = append(tests, f)
		}
	}
	if (targets == nil && len(tests) == 0) || (targets != nil && len(targets) == 0) {
		out.Outcome, out.Targets = verify.Pass, nil
		return out, nil
	}
	for _, t := range targets {
		file, _, _ := strings.Cut(t, "::")
		if err := checkTest(verify.Test{File: file, Name: "suite"}); err != nil {
			return verify.SuiteResult{}, fmt.Errorf("suite target %q: %w", t, err)
		}
	}
	py, err := a.interpreter(ctx, r, dir)
	if err != nil {
		if errors.Is(err, ErrNoPytest) {
			out.Outcome, out.Detail, out.Duration = verify.EnvError, err.Error(), time.Since(start)
			return out, nil
		}
		return verify.SuiteResult{}, err
	}
	run, err := a.pytest(ctx, r, dir, py, targets, timeout)
	if err != nil {
		if errors.Is(err, ErrNoPytest) {
			out.Outcome, out.Detail, out.Duration = verify.EnvError, err.Error(), time.Since(start)
			return out, nil
		}
		return verify.SuiteResult{}, err
	}
	out.Duration = time.Since(start)
	out.Results, out.Units = resultsFromLog(run.log)
	if run.altered != "" {
		for i := range out.Results {
			testlog.MarkAltered(&out.Results[i], run.altered)
		}
	}
	judgeSuite(&out, run, failedCases(run.cases, files), timeout)
	return out, nil
}

// suiteFailures are the cases of a suite run that failed or errored:
// those that did not collect (a module that does not import) apart from
// the others, by node ID, and the first one's detail.
type suiteFailures struct {
	collect, failed []string
	firstDetail     string
}

// failedCases finds the suite's failures, naming each by the test file
// among the repository's Python files.
func failedCases(cases []Case, files []string) suiteFailures {
	byDotted := map[string]string{}
	for _, f := range files {
		byDotted[dottedPath(f)] = f
	}
	var sf suiteFailures
	for _, c := range cases {
		if c.Status != Failure && c.Status != Errored {
			continue
		}
		if c.isCollectionError() {
			sf.collect = append(sf.collect, nodeID(byDotted, c))
		} else {
			sf.failed = append(sf.failed, nodeID(byDotted, c))
		}
		if sf.firstDetail == "" {
			_, sf.firstDetail = Classify(c)
		}
	}
	return sf
}

// judgeSuite sets the suite's outcome from pytest's exit status and its
// failures.
func judgeSuite(out *verify.SuiteResult, run pytestRun, sf suiteFailures, timeout time.Duration) {
	output := string(run.res.Stdout) + "\n" + string(run.res.Stderr)
	switch {
	case run.res.TimedOut:
		out.Outcome = verify.Timeout
		out.Failed = append(sf.collect, sf.failed...)
		out.Detail = fmt.Sprintf("the suite did not finish within %s", timeout)
		out.Units = append(out.Units, verify.UnitResult{Unit: "*", Outcome: verify.Timeout, Detail: out.Detail})
	case run.res.ExitCode == exitUsage && strings.Contains(output, "while loading conftest"):
		c, _ := conftestFailure(output)
		out.Outcome, out.Detail = verify.BuildError, c.Text
		o, d := Classify(c)
		out.Units = append(out.Units, verify.UnitResult{Unit: "*", Outcome: o, Detail: d})
	case len(sf.collect) > 0 || run.res.ExitCode == exitInterrupted:
		// A module that does not import breaks the suite as a build error
		// breaks a Go package.
		out.Outcome = verify.BuildError
		out.Failed = append(sf.collect, sf.failed...)
		out.Detail = sf.firstDetail
		if out.Detail == "" {
			out.Detail = lastLines(output, 20)
		}
	case run.res.ExitCode == exitOK:
		out.Outcome = verify.Pass
	case run.res.ExitCode == exitNoTests:
		out.Outcome, out.Targets = verify.Pass, nil
	case run.res.ExitCode == exitTestsFailed:
		out.Outcome, out.Failed, out.Detail = verify.Fail, sf.failed, sf.firstDetail
		if len(sf.failed) == 0 {
			out.Detail = lastLines(output, 20)
		}
	default:
		out.Outcome = verify.EnvError
		out.Detail = fmt.Sprintf("pytest exited %d: %s", run.res.ExitCode, lastLines(output, 20))
	}
	if run.res.ExitCode == exitUsage && out.Outcome != verify.BuildError && len(out.Results) == 0 {
		out.Outcome = verify.EnvError
		out.Detail = "pytest usage error (exit 4): " + lastLines(output, 20)
	}
}

// nodeID rebuilds a pytest node id from a JUnit case, finding the test
// file among the repository's Python files by its dotted path.
func nodeID(byDotted map[string]string, c Case) string {
	if c.isCollectionError() {
		if f, ok := byDotted[c.Name]; ok {
			return f
		}
		return c.Name
	}
	parts := strings.Split(c.ClassName, ".")
	for i := len(parts); i > 0; i-- {
		if f, ok := byDotted[strings.Join(parts[:i], ".")]; ok {
			return strings.Join(append(append([]string{f}, parts[i:]...), c.Name), "::")
		}
	}
	return c.ClassName + "::" + c.Name
}
