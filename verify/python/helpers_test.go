package python

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// systemPython is where Debian's python3-pytest lives.
const systemPython = "/usr/bin/python3"

// needPytest skips (or, with BCODE_REQUIRE_ALL=1, fails) when no
// interpreter on this machine can import pytest.
func needPytest(t *testing.T) {
	t.Helper()
	testenv.Pytest(t)
}

// needPython skips (or fails) when there is no python3 to parse with.
func needPython(t *testing.T) {
	t.Helper()
	testenv.Python(t)
}

// writeTree writes files (slash paths -> content) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(dedent(content)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dedent strips the common leading tabs of a raw string literal, so test
// sources can be indented with the Go code around them.
func dedent(s string) string {
	s = strings.TrimPrefix(s, "\n")
	lines := strings.Split(s, "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}

// fileChange builds a FileChange from two sides ("" with absent=true on a
// side means no such file).
func fileChange(p string, base, head *string) verify.FileChange {
	fc := verify.FileChange{Path: p}
	if base != nil {
		fc.Base = []byte(dedent(*base))
	}
	if head != nil {
		fc.Head = []byte(dedent(*head))
	}
	switch {
	case base == nil:
		fc.Status = verify.Added
	case head == nil:
		fc.Status = verify.Deleted
	default:
		fc.Status = verify.Modified
	}
	if head != nil {
		fc.Changed = []verify.LineRange{{Start: 1, End: strings.Count(string(fc.Head), "\n") + 1}}
	}
	return fc
}

func str(s string) *string { return &s }

// shared is one adapter for most tests, so interpreters are probed once;
// it chooses them automatically, as in production, and the tests pass
// whether or not the python3 on PATH has pytest.
var shared = New("")

func ctx(t *testing.T) context.Context {
	t.Helper()
	return t.Context()
}

var runner = host.New()

// byName indexes results by test name, keeping every run.
func byName(res []verify.TestResult) map[string][]verify.TestResult {
	out := map[string][]verify.TestResult{}
	for _, r := range res {
		out[r.Test.Name] = append(out[r.Test.Name], r)
	}
	return out
}

func testOf(file, name string) verify.Test {
	return verify.Test{Language: "python", Package: file, File: file, Name: name}
}
