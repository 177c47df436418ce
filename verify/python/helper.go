package python

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// astinfoSource is the syntax helper, run as `python -I -S -c <source>`:
// isolated, and without the site module (it needs only the standard
// library, and site's .pth processing is start-up time spent for nothing).
//
//go:embed astinfo.py
var astinfoSource string

// helperTimeout bounds one run of the syntax helper.
const helperTimeout = 5 * time.Minute

// helperOutputLimit is generous: a dump of every test of a large file is
// long, and a cut answer is useless.
const helperOutputLimit = 256 << 20

// source is one file handed to the helper.
type source struct {
	Path   string `json:"path"`
	Source []byte `json:"source"` // base64 in JSON, decoded by the helper as bytes
}

// skipHit is one thing that skips a test: a marker, call or raise.
type skipHit struct {
	What string `json:"what"` // canonical name, e.g. "pytest.mark.skip"
	Line int    `json:"line"`
	Dump string `json:"dump"` // ast.dump of the marker, for comparing sides
}

// pyTest is one test function or method as pytest would collect it.
type pyTest struct {
	Name  string    `json:"name"` // "test_x", "TestC::test_m"
	Line  int       `json:"line"`
	Dump  string    `json:"dump"`
	Skips []skipHit `json:"skips"`
}

// pyClass is a collected test class, with the skips that apply to all of
// its tests.
type pyClass struct {
	Name  string    `json:"name"`
	Line  int       `json:"line"`
	Skips []skipHit `json:"skips"`
}

// pyImport is one import statement (or one name of `import a, b`).
type pyImport struct {
	Module string   `json:"module"`
	Names  []string `json:"names"`
	Level  int      `json:"level"`
	Line   int      `json:"line"`
}

// syntaxError is where a file fails to parse.
type syntaxError struct {
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

// fileInfo is the helper's answer for one file.
type fileInfo struct {
	Path        string       `json:"path"`
	Error       *syntaxError `json:"error"`
	Tests       []pyTest     `json:"tests"`
	Classes     []pyClass    `json:"classes"`
	ModuleSkips []skipHit    `json:"module_skips"`
	Imports     []pyImport   `json:"imports"`
}

// parseFailure formats a syntax error as file:line.
func (f *fileInfo) parseFailure() error {
	if f.Error == nil {
		return nil
	}
	if f.Error.Line > 0 {
		return fmt.Errorf("%s:%d: %s", f.Path, f.Error.Line, f.Error.Msg)
	}
	return fmt.Errorf("%s: %s", f.Path, f.Error.Msg)
}

// Modes of the helper.
const (
	modeTests   = "tests"
	modeImports = "imports"
)

// runHelper parses files with python through r. It never writes a file:
// sources go in on stdin, the answer comes back on stdout.
func runHelper(ctx context.Context, r sandbox.Runner, python, dir, mode string, files []source) ([]fileInfo, error) {
	infos, _, err := runHelperExe(ctx, r, python, dir, mode, files)
	return infos, err
}

// runHelperExe is runHelper that also returns the interpreter's
// sys.executable.
func runHelperExe(ctx context.Context, r sandbox.Runner, python, dir, mode string, files []source) ([]fileInfo, string, error) {
	req, err := json.Marshal(struct {
		Mode  string   `json:"mode"`
		Files []source `json:"files"`
	}{mode, files})
	if err != nil {
		return nil, "", err
	}
	if dir == "" {
		dir = os.TempDir()
	}
	res, err := r.Run(ctx, sandbox.Command{
		Dir:         dir,
		Args:        []string{python, "-I", "-S", "-c", astinfoSource},
		Stdin:       bytes.NewReader(req),
		Timeout:     sandbox.ReadLoad().Deadline(helperTimeout, 0),
		OutputLimit: helperOutputLimit,
	})
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil, "", fmt.Errorf("%s: %w", python, errNoInterpreter)
	}
	if err != nil {
		return nil, "", fmt.Errorf("running the python syntax helper with %s: %w", python, err)
	}
	if res.ExitCode == 127 { // a shim (pyenv) whose version lacks the command
		return nil, "", fmt.Errorf("%s: %w (exit 127: %s)", python, errNoInterpreter, lastLines(string(res.Stderr), 2))
	}
	if res.TimedOut {
		return nil, "", fmt.Errorf("the python syntax helper timed out after %s", res.Duration.Round(time.Second))
	}
	if res.ExitCode != 0 {
		return nil, "", fmt.Errorf("the python syntax helper (%s) failed with exit %d: %s", python, res.ExitCode, lastLines(string(res.Stderr), 10))
	}
	if res.Truncated {
		return nil, "", fmt.Errorf("the python syntax helper's answer exceeded %d bytes", helperOutputLimit)
	}
	var out struct {
		Python string     `json:"python"`
		Files  []fileInfo `json:"files"`
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil {
		return nil, "", fmt.Errorf("reading the python syntax helper's answer: %w", err)
	}
	if len(out.Files) != len(files) {
		return nil, "", fmt.Errorf("the python syntax helper answered for %d files, asked about %d", len(out.Files), len(files))
	}
	return out.Files, out.Python, nil
}

// parseNoDir runs the helper through the adapter's parser runner, with the
// first candidate interpreter that exists.
func (a *Adapter) parseNoDir(ctx context.Context, mode string, files []source) ([]fileInfo, error) {
	if len(files) == 0 {
		return nil, nil
	}
	r, py := a.parserRunner()
	if py != "" {
		return runHelper(ctx, r, py, "", mode, files)
	}
	a.parsing.Lock()
	defer a.parsing.Unlock()
	if r, py = a.parserRunner(); py != "" { // chosen while we waited
		return runHelper(ctx, r, py, "", mode, files)
	}
	// Across gates: the interpreter kept on disk (probecache.go). The
	// helper only parses, so any that ran it before will do.
	diskKey := ""
	if r.Name() == "host" {
		diskKey = choiceKey("parser", "", a.parserCandidates())
		if py, ok := loadChoice(diskKey); ok {
			infos, err := runHelper(ctx, r, py, "", mode, files)
			if err == nil {
				a.setParserPython(py)
				return infos, nil
			}
			if ctx.Err() != nil || !errors.Is(err, errNoInterpreter) {
				return nil, err
			}
		}
	}
	var why []string
	for _, c := range a.parserCandidates() {
		infos, exe, err := runHelperExe(ctx, r, c, "", mode, files)
		if err == nil {
			if exe == "" || a.Python != "" {
				exe = c // keep what the user configured
			}
			a.setParserPython(exe)
			if diskKey != "" {
				saveChoice(diskKey, exe, append(append([]string(nil), a.parserCandidates()...), exe))
			}
			return infos, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, errNoInterpreter) {
			return nil, err
		}
		why = append(why, err.Error())
	}
	return nil, fmt.Errorf("no Python interpreter to parse test files (%s): install python3 or set gate.python in .bcode/config.toml", strings.Join(why, "; "))
}

// errNoInterpreter marks a helper run whose interpreter does not exist.
var errNoInterpreter = errors.New("interpreter not found")

// lastLines keeps the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// firstLines keeps the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
