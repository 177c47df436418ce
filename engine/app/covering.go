package app

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/golang"
	"github.com/bcode-dev/bcode/verify/python"
)

// ErrNotATestName: a covering test's name is not one the evidence report
// gives (a Go test name, or a Python file::name).
var ErrNotATestName = fmt.Errorf("app: not a covering test's name")

// CoveringTestsRequest is a mutant's covering tests, to run on the
// checkout as it is (the user's own code, as gopls's "run test" does).
type CoveringTestsRequest struct {
	// Dir is the checkout's top directory.
	Dir string
	// File is the mutated source file, relative to Dir; it decides the
	// language, and for Go the package the tests are in.
	File string
	// Tests are the names the evidence report gives: Go test names
	// ("TestX", "TestX/sub"), or Python file::name.
	Tests   []string
	Timeout time.Duration
	// Runner runs them; nil: the engine's.
	Runner sandbox.Runner
}

// RunCoveringTests runs req's tests once each through the language's
// adapter (verify/golang, verify/python: the gate's own way of running
// tests, with the interpreter the base configuration names), on the
// engine's runner, and returns one result per test.
func (e *Engine) RunCoveringTests(ctx context.Context, req CoveringTestsRequest) ([]verify.TestResult, error) {
	var a verify.Adapter
	tests := make([]verify.Test, 0, len(req.Tests))
	switch {
	case strings.HasSuffix(req.File, ".go"):
		a = golang.New()
		pkg := "./" + path.Dir(req.File)
		if path.Dir(req.File) == "." {
			pkg = "."
		}
		for _, n := range req.Tests {
			if !goTestName(n) {
				return nil, fmt.Errorf("covering test %q: %w", n, ErrNotATestName)
			}
			tests = append(tests, verify.Test{Language: "go", Package: pkg, File: req.File, Name: n})
		}
	case strings.HasSuffix(req.File, ".py"):
		cfg := baseConfig(ctx, req.Dir, "HEAD")
		py := python.New(cfg.Gate.Python)
		py.StartupFiles = cfg.Python.StartupFiles
		a = py
		for _, n := range req.Tests {
			file, name, ok := strings.Cut(n, "::")
			if !ok || file == "" || name == "" || strings.ContainsAny(n, " \t\n") || strings.HasPrefix(file, "-") {
				return nil, fmt.Errorf("covering test %q: %w", n, ErrNotATestName)
			}
			tests = append(tests, verify.Test{Language: "python", Package: file, File: file, Name: name})
		}
	default:
		return nil, fmt.Errorf("%s: no language adapter runs its tests", req.File)
	}
	r := req.Runner
	if r == nil {
		r = e.runner()
	}
	if p, ok := a.(verify.Preparer); ok {
		p.Prepare(ctx, r, req.Dir)
	}
	return a.RunTests(ctx, r, req.Dir, tests, verify.RunOptions{Count: 1, Timeout: req.Timeout})
}

// goTestName reports whether n is a Go test's name and its subtests: an
// identifier, then anything without spaces after a slash.
func goTestName(n string) bool {
	top, sub, hasSub := strings.Cut(n, "/")
	if top == "" || (hasSub && strings.ContainsAny(sub, " \t\n")) {
		return false
	}
	for i, c := range top {
		letter := c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
