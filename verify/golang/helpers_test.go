package golang

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// needGo skips (or, under BCODE_REQUIRE_ALL=1, fails) a test that runs the
// real go command when it is missing.
func needGo(t *testing.T) {
	t.Helper()
	testenv.Go(t)
}

// newRunner is a host runner that never reaches the network: the test
// modules use only the standard library, and the build cache is the
// caller's, shared by every test.
func newRunner(t *testing.T) *host.Runner {
	t.Helper()
	needGo(t)
	return &host.Runner{Extra: []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}}
}

// writeTree writes files (slash paths → content) below a fresh temporary
// directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const goMod = "module example.com/m\n\ngo 1.26\n"

// fileChange builds a FileChange from the two sides (empty string: the
// side has no such file).
func fileChange(path, base, head string) verify.FileChange {
	fc := verify.FileChange{Path: path, Status: verify.Modified}
	if base != "" {
		fc.Base = []byte(base)
	}
	if head != "" {
		fc.Head = []byte(head)
	}
	switch {
	case base == "":
		fc.Status = verify.Added
	case head == "":
		fc.Status = verify.Deleted
	}
	return fc
}

func changeOf(files ...verify.FileChange) *verify.Change {
	return &verify.Change{Base: "base", Head: "head", Files: files}
}

func names(ts []verify.Test) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Package + ":" + t.Name
	}
	return out
}

// byName groups results by test name.
func byName(rs []verify.TestResult) map[string][]verify.TestResult {
	m := map[string][]verify.TestResult{}
	for _, r := range rs {
		m[r.Test.Name] = append(m[r.Test.Name], r)
	}
	return m
}

func outcomesOf(rs []verify.TestResult) []verify.Outcome {
	out := make([]verify.Outcome, len(rs))
	for i, r := range rs {
		out[i] = r.Outcome
	}
	return out
}

func goTests(pkg string, ns ...string) []verify.Test {
	var out []verify.Test
	for _, n := range ns {
		out = append(out, verify.Test{Language: "go", Package: pkg, Name: n})
	}
	return out
}
