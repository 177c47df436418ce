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
	// Checkout is the user's checkout, whose .venv (untracked, so absent
	// from the snapshots) is the interpreter when the snapshot has none.
	// Only set it for the user's own changes run on the host: an agent's
	// worktree is hostile, and a container does not see the path.
	Checkout string
	// StartupFiles runs the snapshot's sitecustomize.py and
	// usercustomize.py in pytest's process once pytest has loaded, and
	// its sitecustomize.py in the processes tests start (they run without
	// the user site); the base's `[python] startup_files = true`. Tamper
	// then reports a change to them as test infrastructure. Off, no file
	// of the snapshot runs at start-up (run.go pytestCommand).
	StartupFiles bool

	mu        sync.Mutex
	probing   sync.Mutex       // held while an interpreter is being chosen
	parsing   sync.Mutex       // held while the syntax helper's interpreter is being chosen
	pytestFor map[string]probe // by runner, and by snapshot for those with a .venv
	parser    sandbox.Runner
	parserPy  string
	parsed    struct { // the last change's test files, parsed
		change *verify.Change
		infos  []fileInfo
	}
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

// startupFiles are the modules site imports at start-up from sys.path.
var startupFiles = map[string]bool{"sitecustomize.py": true, "usercustomize.py": true}

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

// Prepare implements verify.Preparer: it chooses the interpreter for dir's
// runs, which then find it chosen.
func (a *Adapter) Prepare(ctx context.Context, r sandbox.Runner, dir string) {
	_, _ = a.interpreter(ctx, r, dir) // the runs report what it found
}

// Interpreter returns the Python that runs pytest in dir, as the adapter's
// own runs choose it: mutation evidence runs its mutants under the same one.
func (a *Adapter) Interpreter(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	return a.interpreter(ctx, r, dir)
}

// interpreter returns the Python that runs pytest in dir, probing the
// candidates through r once per snapshot with a .venv, and once for all
// snapshots without one (they share PATH and /usr/bin).
func (a *Adapter) interpreter(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	candidates, ownVenv := a.pythonCandidates(dir)
	cacheKey := r.Name() + "\x00" // answers differ between a host and a container
	if ownVenv {
		cacheKey += dir
	}
	// One probe at a time: concurrent runs on fresh snapshots would all
	// start the same slow interpreters only to learn the same answer.
	a.probing.Lock()
	defer a.probing.Unlock()
	a.mu.Lock()
	if p, ok := a.pytestFor[cacheKey]; ok {
		a.mu.Unlock()
		return p.python, p.err
	}
	a.mu.Unlock()
	// Across gates: the answer kept on disk (probecache.go), only for the
	// host and never for a snapshot's own .venv.
	diskKey := ""
	if r.Name() == "host" && cacheKey == r.Name()+"\x00" {
		diskKey = choiceKey("pytest", dir, candidates)
		if py, ok := loadChoice(diskKey); ok {
			a.remember(cacheKey, probe{python: py})
			return py, nil
		}
	}

	answers := probePytest(ctx, r, dir, candidates)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var why []string
	found := ""
	for _, an := range answers {
		if an.found != "" {
			found = an.found
			if diskKey != "" && len(an.depends) > 0 {
				saveChoice(diskKey, found, append(append([]string(nil), candidates...), an.depends...))
			}
			break
		}
		why = append(why, an.why)
	}
	p := probe{python: found}
	if found == "" {
		p.err = fmt.Errorf("%w (tried %s)", ErrNoPytest, strings.Join(why, "; "))
	}
	a.remember(cacheKey, p)
	return p.python, p.err
}

// pythonCandidates are the interpreters to try for dir, in order: the
// configured one alone, else the snapshot's own .venv (ownVenv: its
// answer holds for this snapshot only) or the checkout's, then python3
// on PATH and /usr/bin/python3.
func (a *Adapter) pythonCandidates(dir string) (candidates []string, ownVenv bool) {
	if a.Python != "" {
		return []string{a.Python}, false
	}
	venv := filepath.Join(dir, ".venv", "bin", "python")
	if fi, err := os.Stat(venv); err == nil && !fi.IsDir() {
		candidates = append(candidates, venv)
		ownVenv = true
	} else if a.Checkout != "" {
		venv := filepath.Join(a.Checkout, ".venv", "bin", "python")
		if fi, err := os.Stat(venv); err == nil && !fi.IsDir() {
			candidates = append(candidates, venv)
		}
	}
	return append(candidates, "python3", "/usr/bin/python3"), ownVenv
}

// pytestAnswer is what probing one candidate found.
type pytestAnswer struct {
	found, why string
	depends    []string // files the answer rests on: the interpreter, pytest
}

// probePytest probes every candidate at once; the caller takes the first
// in order that imports pytest: a launcher shim that turns out to have no
// pytest (pyenv's costs seconds under load) is then not paid before the
// next candidate starts.
func probePytest(ctx context.Context, r sandbox.Runner, dir string, candidates []string) []pytestAnswer {
	answers := make([]pytestAnswer, len(candidates))
	var wg sync.WaitGroup
	for i, c := range candidates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// -I: a pytest.py of the snapshot (the working directory)
			// must not answer for the interpreter's.
			res, err := r.Run(ctx, sandbox.Command{Dir: dir, Args: []string{c, "-I", "-c", "import sys, pytest; print(sys.executable); print(pytest.__file__)"}, Timeout: sandbox.ReadLoad().Deadline(probeTimeout, 0)})
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, sandbox.ErrNotFound):
				answers[i].why = c + ": not found"
			case err != nil:
				answers[i].why = fmt.Sprintf("%s: %v", c, err)
			case res.TimedOut:
				answers[i].why = c + ": import pytest timed out"
			case res.ExitCode != 0:
				answers[i].why = c + ": cannot import pytest"
			default:
				// Run the real interpreter from now on, not a launcher
				// shim (pyenv's cost a second or more per start); a
				// configured or virtualenv interpreter is kept as named.
				answers[i].found = c
				out := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
				exe := strings.TrimSpace(out[0])
				if c == "python3" && path.IsAbs(exe) {
					answers[i].found = exe
				}
				if len(out) == 2 && path.IsAbs(exe) && path.IsAbs(strings.TrimSpace(out[1])) {
					answers[i].depends = []string{exe, strings.TrimSpace(out[1])}
				}
			}
		}()
	}
	wg.Wait()
	return answers
}

// remember keeps p as the interpreter for cacheKey for this adapter's life.
func (a *Adapter) remember(cacheKey string, p probe) {
	a.mu.Lock()
	if a.pytestFor == nil {
		a.pytestFor = map[string]probe{}
	}
	a.pytestFor[cacheKey] = p
	a.mu.Unlock()
}

// parserCandidates are the interpreters tried for the syntax helper when
// no snapshot directory is at hand; any Python 3 can parse.
func (a *Adapter) parserCandidates() []string {
	if a.Python != "" {
		return []string{a.Python}
	}
	return []string{"python3", "/usr/bin/python3"}
}

// parserRunner returns the runner for the syntax helper and the
// interpreter last found to run it ("" before the first run).
func (a *Adapter) parserRunner() (sandbox.Runner, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.parser == nil {
		a.parser = a.Parser
		if a.parser == nil {
			a.parser = host.New()
		}
	}
	return a.parser, a.parserPy
}

func (a *Adapter) setParserPython(py string) {
	a.mu.Lock()
	a.parserPy = py
	a.mu.Unlock()
}
