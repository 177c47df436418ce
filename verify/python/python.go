// Package python is the verification gate's Python (pytest) adapter. It finds
// the tests a change adds or modifies with Python's own ast module (a small
// embedded helper run by the repository's interpreter), runs them with
// pytest through a sandbox.Runner, reads the JUnit report into outcomes,
// computes the test files a change reaches through imports, and reports
// pytest-specific tampering (deleted or newly skipped tests, changed
// conftest.py and pytest configuration).
package python

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// Adapter is the Python language support of the gate.
type Adapter struct {
	// Python is the interpreter that runs pytest and the syntax helper
	// (gate.python in .bcode/config.toml). Empty means: the snapshot's
	// .venv/bin/python, else python3 on the sandbox's PATH, else
	// /usr/bin/python3 — the first of them that can import pytest.
	Python string
	// Parser runs the syntax helper for ChangedTests and Tamper, whose
	// signatures carry no runner. Nil means a host runner with a scrubbed
	// environment: the helper only parses (python -I, no repository code is
	// imported), so running it outside the sandbox exposes nothing.
	Parser sandbox.Runner

	mu          sync.Mutex
	pytestFor   map[string]probe // by snapshot directory
	parser      sandbox.Runner
	parserPy    string
	parserErr   error
	parserReady bool
}

type probe struct {
	python string
	err    error
}

// New returns an Adapter that runs python (empty: choose automatically).
func New(python string) *Adapter { return &Adapter{Python: python} }

var _ verify.Adapter = (*Adapter)(nil)

// Language implements verify.Adapter.
func (a *Adapter) Language() string { return "python" }

// configFiles decide how pytest collects and runs tests.
var configFiles = map[string]bool{
	"conftest.py": true, "pytest.ini": true, "tox.ini": true, "setup.cfg": true,
	"pyproject.toml": true, ".coveragerc": true,
}

// Owns implements verify.Adapter: Python sources and pytest's configuration.
func (a *Adapter) Owns(p string) bool {
	return strings.HasSuffix(p, ".py") || configFiles[path.Base(p)]
}

// IsTestFile implements verify.Adapter with pytest's default python_files
// (test_*.py and *_test.py). conftest.py is infrastructure, not tests.
func (a *Adapter) IsTestFile(p string) bool {
	b := path.Base(p)
	if !strings.HasSuffix(b, ".py") || b == "conftest.py" {
		return false
	}
	return strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py")
}

// ErrNoPytest is wrapped by every error that means no interpreter could
// import pytest. The gate reports it as an environment error.
var ErrNoPytest = errors.New("pytest not found: install it (Debian: apt-get install python3-pytest; or pip install pytest in the repo's venv) or set gate.python in .bcode/config.toml")

// probeTimeout bounds one `python -c "import pytest"`.
const probeTimeout = time.Minute

// interpreter returns the Python that runs pytest in dir, probing the
// candidates once per directory through r.
func (a *Adapter) interpreter(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	a.mu.Lock()
	if p, ok := a.pytestFor[dir]; ok {
		a.mu.Unlock()
		return p.python, p.err
	}
	a.mu.Unlock()

	var candidates []string
	if a.Python != "" {
		candidates = []string{a.Python}
	} else {
		venv := filepath.Join(dir, ".venv", "bin", "python")
		if fi, err := os.Stat(venv); err == nil && !fi.IsDir() {
			candidates = append(candidates, venv)
		}
		candidates = append(candidates, "python3", "/usr/bin/python3")
	}
	var why []string
	found := ""
	for _, c := range candidates {
		res, err := r.Run(ctx, sandbox.Command{Dir: dir, Args: []string{c, "-c", "import pytest"}, Timeout: probeTimeout})
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		switch {
		case errors.Is(err, sandbox.ErrNotFound):
			why = append(why, c+": not found")
		case err != nil:
			why = append(why, fmt.Sprintf("%s: %v", c, err))
		case res.TimedOut:
			why = append(why, c+": import pytest timed out")
		case res.ExitCode != 0:
			why = append(why, c+": cannot import pytest")
		default:
			found = c
		}
		if found != "" {
			break
		}
	}
	p := probe{python: found}
	if found == "" {
		p.err = fmt.Errorf("%w (tried %s)", ErrNoPytest, strings.Join(why, "; "))
	}
	a.mu.Lock()
	if a.pytestFor == nil {
		a.pytestFor = map[string]probe{}
	}
	a.pytestFor[dir] = p
	a.mu.Unlock()
	return p.python, p.err
}

// parserRunner returns the runner and interpreter that run the syntax
// helper when no snapshot directory is at hand.
func (a *Adapter) parserRunner(ctx context.Context) (sandbox.Runner, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.parserReady {
		return a.parser, a.parserPy, a.parserErr
	}
	r := a.Parser
	if r == nil {
		r = host.New()
	}
	candidates := []string{"python3", "/usr/bin/python3"}
	if a.Python != "" {
		candidates = []string{a.Python}
	}
	var why []string
	for _, c := range candidates {
		res, err := r.Run(ctx, sandbox.Command{Dir: os.TempDir(), Args: []string{c, "-I", "-c", "import ast, base64, json"}, Timeout: probeTimeout})
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if err == nil && res.ExitCode == 0 && !res.TimedOut {
			a.parser, a.parserPy, a.parserReady = r, c, true
			return r, c, nil
		}
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", c, err))
		} else {
			why = append(why, fmt.Sprintf("%s: exit %d", c, res.ExitCode))
		}
	}
	a.parserErr = fmt.Errorf("no Python interpreter to parse test files (tried %s): install python3 or set gate.python in .bcode/config.toml", strings.Join(why, "; "))
	a.parserReady = true
	return nil, "", a.parserErr
}
