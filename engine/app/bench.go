package app

import (
	"context"
	"path"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// ChecksRequest is a bench task's hidden checks, to run on a snapshot the
// bench made (a plain directory, not a repository).
type ChecksRequest struct {
	Dir string
	// Selectors are the tests to run, as verify.ParseTestCommand reads
	// them from test commands (a Go selector's Name is a -run pattern).
	Selectors []verify.Test
	// Config is the task's base configuration (gate.test_timeout, the
	// Python interpreter); every selected test runs once.
	Config config.Config
	// Runner runs them; nil: the engine's (the host).
	Runner sandbox.Runner
}

// RunChecks runs the tests req selects in req.Dir with the gate's
// adapters (check.Adapters), once each, and says which ran, passed,
// failed or could not run (verify.Reproduction).
func (e *Engine) RunChecks(ctx context.Context, req ChecksRequest) (*verify.Reproduction, error) {
	r := req.Runner
	if r == nil {
		r = e.runner()
	}
	cfg := req.Config
	cfg.Gate.FlakeRuns = 1
	g := &verify.Gate{Runner: r, Adapters: check.Adapters(r, cfg)}
	return g.Reproduce(ctx, req.Dir, req.Selectors, cfg)
}

// testConfigFiles decide how tests are found and run, beside the test
// files themselves: pytest's configuration and start-up modules, node's
// package.json (its "test" script and runner settings) and the runners'
// own configuration files.
var testConfigFiles = map[string]bool{
	"conftest.py": true, "pytest.ini": true, "tox.ini": true, "setup.cfg": true, "pyproject.toml": true,
	".coveragerc": true, "sitecustomize.py": true, "usercustomize.py": true, "package.json": true,
}

// testConfigPrefixes are runner configuration files by the start of
// their name (jest.config.js, vitest.config.ts, .mocharc.yml).
var testConfigPrefixes = []string{"jest.config.", "vitest.config.", ".mocharc", "karma.conf."}

// IsTestInfrastructure reports whether p (slash-separated, relative to the
// repository root) is a test file a language adapter recognises, a file
// that configures how tests run, or lies in a testdata directory: what
// the bench restores to the base before its hidden checks unless a task
// allows changing it.
func IsTestInfrastructure(p string) bool {
	for _, a := range check.Adapters(nil, config.Default()) {
		if a.IsTestFile(p) {
			return true
		}
	}
	b := path.Base(p)
	if testConfigFiles[b] {
		return true
	}
	for _, pre := range testConfigPrefixes {
		if strings.HasPrefix(b, pre) {
			return true
		}
	}
	return strings.HasPrefix(p, "testdata/") || strings.Contains(p, "/testdata/")
}

// TestSplicer is the gate's way of laying one file's test modules over
// another's for lang (Rust: its #[cfg(test)] modules live in the source
// file they test), nil for a language whose tests live in files of their
// own. The bench writes a hidden file through it so the hidden tests
// reach grading without the file's code: the reference's fix must never
// replace the agent's.
func TestSplicer(lang string) verify.TestSplicer {
	for _, a := range check.Adapters(nil, config.Default()) {
		if a.Language() == lang {
			s, _ := a.(verify.TestSplicer)
			return s
		}
	}
	return nil
}
