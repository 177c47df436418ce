package python

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

func TestMain(m *testing.M) {
	// The package's tests keep interpreter answers in a directory of their
	// own, not in the user's cache.
	d, err := os.MkdirTemp("", "bcode-python-choice-")
	if err != nil {
		panic(err)
	}
	choiceDir = func() string { return d }
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// countingRunner is the host runner that counts the interpreter probes and
// syntax-helper runs it starts.
type countingRunner struct {
	sandbox.Runner
	probes, helpers atomic.Int32
}

func (c *countingRunner) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	switch {
	case len(cmd.Args) == 4 && strings.Contains(cmd.Args[3], "import sys, pytest"):
		c.probes.Add(1)
	case len(cmd.Args) > 2 && cmd.Args[1] == "-I" && cmd.Args[2] == "-S":
		c.helpers.Add(1)
	}
	return c.Runner.Run(ctx, cmd)
}

// TestInterpreterChoiceKeptAcrossGates: a second adapter (a second gate)
// takes the probe's answer from the disk cache without starting an
// interpreter, while a snapshot whose .python-version differs, or one with
// its own .venv, is probed afresh.
func TestInterpreterChoiceKeptAcrossGates(t *testing.T) {
	needPytest(t)
	r := &countingRunner{Runner: runner}
	dir := t.TempDir()
	// A project's pyenv choice is part of the key; a unique one keeps this
	// test's entry its own.
	if err := os.WriteFile(filepath.Join(dir, ".python-version"), []byte("system\n# "+t.Name()+time.Now().String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := New("").interpreter(ctx(t), r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.probes.Load() == 0 {
		t.Fatal("the first gate started no probe")
	}
	n := r.probes.Load()
	second, err := New("").interpreter(ctx(t), r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || r.probes.Load() != n {
		t.Errorf("second gate: chose %s with %d more probes, want %s from the cache with none", second, r.probes.Load()-n, first)
	}

	// Another repository's configuration does not share the answer.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, ".python-version"), []byte("system\n# other "+time.Now().String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New("").interpreter(ctx(t), r, other); err != nil {
		t.Fatal(err)
	}
	if r.probes.Load() == n {
		t.Error("a snapshot with another .python-version took the cached answer")
	}

	// A snapshot's own .venv is never kept: every gate probes it.
	venvDir := t.TempDir()
	venv := filepath.Join(venvDir, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(first, filepath.Join(venv, "python")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		before := r.probes.Load()
		got, err := New("").interpreter(ctx(t), r, venvDir)
		if err != nil {
			t.Fatal(err)
		}
		if got != filepath.Join(venv, "python") || r.probes.Load() == before {
			t.Errorf("gate %d on a snapshot with .venv: chose %s after %d probes, want its .venv probed", i, got, r.probes.Load()-before)
		}
	}
}

// TestParserChoiceKeptAcrossGates: the syntax helper's interpreter, once
// found, is started directly by the next gate (one helper run, no
// candidate tried first).
func TestParserChoiceKeptAcrossGates(t *testing.T) {
	needPython(t)
	files := []source{{Path: "tests/test_a.py", Source: []byte("def test_a():\n    assert 1\n")}}
	r := &countingRunner{Runner: runner}
	a := New("")
	a.Parser = r
	infos, err := a.parseNoDir(ctx(t), modeTests, files)
	if err != nil || len(infos) != 1 || len(infos[0].Tests) != 1 {
		t.Fatalf("first parse: %+v, %v", infos, err)
	}
	_, py := a.parserRunner()
	b := New("")
	b.Parser = r
	before := r.helpers.Load()
	infos2, err := b.parseNoDir(ctx(t), modeTests, files)
	if err != nil || len(infos2) != 1 || infos2[0].Tests[0].Dump != infos[0].Tests[0].Dump {
		t.Fatalf("second parse: %+v, %v; want the first's answer", infos2, err)
	}
	if _, py2 := b.parserRunner(); py2 != py || r.helpers.Load()-before != 1 {
		t.Errorf("second gate parsed with %s in %d runs, want %s in 1", py2, r.helpers.Load()-before, py)
	}
}

// TestChoiceStampsAndAge: a kept answer holds while the files it rests on
// are unchanged and it is younger than choiceTTL.
func TestChoiceStampsAndAge(t *testing.T) {
	f := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(f, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := choiceKey("test", "", []string{f, t.Name()})
	saveChoice(key, f, []string{f})
	if py, ok := loadChoice(key); !ok || py != f {
		t.Fatalf("fresh entry: %q %v", py, ok)
	}
	if _, ok := loadChoice(choiceKey("test", "", []string{t.Name(), f})); ok {
		t.Error("candidates in another order share the entry")
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	if _, ok := loadChoice(key); ok {
		t.Error("entry used after the interpreter changed")
	}
	saveChoice(key, f, []string{f})
	// Age it past the TTL by rewriting its time.
	p := filepath.Join(choiceDir(), key+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-choiceTTL - time.Minute).UTC().Format(time.RFC3339Nano)
	s := string(b)
	i := strings.Index(s, `"at":"`)
	if i < 0 {
		t.Fatalf("no time in %s", s)
	}
	j := strings.Index(s[i+6:], `"`)
	s = s[:i+6] + old + s[i+6+j:]
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := loadChoice(key); ok {
		t.Error("entry older than choiceTTL used")
	}
}

// TestChoiceOnlyFromAPrivateFile: an entry another user could have written
// (group- or world-writable), or one whose interpreter is not among the
// files it stamps, is not believed.
func TestChoiceOnlyFromAPrivateFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(f, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := choiceKey("test", "", []string{f, t.Name()})
	saveChoice(key, f, []string{f})
	p := filepath.Join(choiceDir(), key+".json")
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, ok := loadChoice(key); ok {
		t.Error("a world-writable entry was used")
	}
	other := filepath.Join(t.TempDir(), "evil")
	saveChoice(key, other, []string{f})
	if _, ok := loadChoice(key); ok {
		t.Error("an entry naming an unstamped interpreter was used")
	}
}
