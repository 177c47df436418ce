package app

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// ErrNotATestName: a covering test's name is not one the evidence report
// gives (a Go test name, or a Python, JavaScript or Rust file::name).
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
	// ("TestX", "TestX/sub"), or Python, JavaScript or Rust file::name.
	Tests   []string
	Timeout time.Duration
	// Runner runs them; nil: the engine's.
	Runner sandbox.Runner
}

// RunCoveringTests runs req's tests once each through the adapter that
// owns req.File (check.Adapters: the gate's own way of running tests, with
// the interpreter the base configuration names), on the engine's runner,
// and returns one result per test.
func (e *Engine) RunCoveringTests(ctx context.Context, req CoveringTestsRequest) ([]verify.TestResult, error) {
	r := req.Runner
	if r == nil {
		r = e.runner()
	}
	var a verify.Adapter
	for _, c := range check.Adapters(r, baseConfig(ctx, req.Dir, "HEAD")) {
		if c.Owns(req.File) {
			a = c
			break
		}
	}
	if a == nil {
		return nil, fmt.Errorf("%s: no language adapter runs its tests", req.File)
	}
	tests := make([]verify.Test, 0, len(req.Tests))
	for _, n := range req.Tests {
		t, ok := coveringTest(a.Language(), req.File, n)
		if !ok {
			return nil, fmt.Errorf("covering test %q: %w", n, ErrNotATestName)
		}
		tests = append(tests, t)
	}
	if p, ok := a.(verify.Preparer); ok {
		p.Prepare(ctx, r, req.Dir)
	}
	return a.RunTests(ctx, r, req.Dir, tests, verify.RunOptions{Count: 1, Timeout: req.Timeout})
}

// coveringTest is the test the evidence report names n, a test of lang
// covering file: a Go test name, run in file's package, or a Python or
// JavaScript file::name, or a Rust target's root file::name (the engines'
// KillerName).
func coveringTest(lang, file, n string) (verify.Test, bool) {
	switch lang {
	case "go":
		pkg := "./" + path.Dir(file)
		if path.Dir(file) == "." {
			pkg = "."
		}
		return verify.Test{Language: lang, Package: pkg, File: file, Name: n}, goTestName(n)
	case "python", "javascript", "rust":
		f, name, ok := strings.Cut(n, "::")
		// A pytest name has no spaces; a JavaScript one (describe path,
		// test name) or a Rust doc test's may, but not a line break.
		bad := " \t\n"
		if lang != "python" {
			bad = "\n\r\x00"
		}
		if !ok || f == "" || name == "" || strings.ContainsAny(n, bad) || strings.HasPrefix(f, "-") {
			return verify.Test{}, false
		}
		return verify.Test{Language: lang, Package: f, File: f, Name: name}, true
	}
	return verify.Test{}, false
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
