package python

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

// dirWorkspace lays out two in-memory trees, like the git workspace does
// with commits: every Materialize is a fresh directory.
type dirWorkspace struct {
	t          *testing.T
	base, head map[string]string
}

func (w *dirWorkspace) Materialize(_ context.Context, side verify.Side, overlay []verify.FileChange) (string, error) {
	dir := w.t.TempDir()
	tree := w.base
	if side == verify.HeadSide {
		tree = w.head
	}
	writeTree(w.t, dir, tree)
	for _, f := range overlay {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if f.Head == nil {
			os.Remove(p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, f.Head, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (w *dirWorkspace) ReadBase(_ context.Context, p string) ([]byte, error) {
	if s, ok := w.base[p]; ok {
		return []byte(dedent(s)), nil
	}
	return nil, fs.ErrNotExist
}

func (w *dirWorkspace) Close() error { return nil }

// changeOf diffs two trees into a Change.
func changeOf(t *testing.T, base, head map[string]string) *verify.Change {
	paths := map[string]bool{}
	for p := range base {
		paths[p] = true
	}
	for p := range head {
		paths[p] = true
	}
	var sorted []string
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	c := &verify.Change{Base: "base", Head: "head", Workspace: &dirWorkspace{t: t, base: base, head: head}}
	for _, p := range sorted {
		b, inBase := base[p]
		h, inHead := head[p]
		if inBase && inHead && b == h {
			continue
		}
		var bp, hp *string
		if inBase {
			bp = &b
		}
		if inHead {
			hp = &h
		}
		c.Files = append(c.Files, fileChange(p, bp, hp))
	}
	return c
}

// TestGateWithPytest runs the whole gate over the Python adapter: a fix
// with a test that fails on the base by assertion is verified; a test of a
// function the change adds is only green.
func TestGateWithPytest(t *testing.T) {
	t.Parallel()
	needPytest(t)
	base := map[string]string{
		"calc.py":            "def add(a, b):\n    return a - b\n",
		"tests/test_calc.py": "import calc\n\ndef test_zero():\n    assert calc.add(0, 0) == 0\n",
	}
	cases := []struct {
		name string
		head map[string]string
		want verify.Verdict
		test string // the new test
		why  string // its reason
	}{
		{name: "fix with a failing-before test", test: "test_add", head: map[string]string{
			"calc.py":            "def add(a, b):\n    return a + b\n",
			"tests/test_calc.py": "import calc\n\ndef test_zero():\n    assert calc.add(0, 0) == 0\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n",
		}, want: verify.Verified, why: verify.ReasonCredited},
		{name: "test of a function the change adds", test: "test_mul", head: map[string]string{
			"calc.py":            "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n",
			"tests/test_calc.py": "import calc\nfrom calc import mul\n\ndef test_zero():\n    assert calc.add(0, 0) == 0\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
		}, want: verify.Green, why: verify.ReasonImportOnBase},
	}
	cfg := config.Default()
	cfg.Gate.FlakeRuns = 1
	for _, c := range cases {
		g := &verify.Gate{Runner: runner, Adapters: []verify.Adapter{shared}}
		rep, err := g.Check(ctx(t), changeOf(t, base, c.head), cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var why string
		for _, tr := range rep.Tests {
			if tr.Name == c.test {
				why = tr.Reason
			}
		}
		if rep.Verdict != c.want || why != c.why {
			t.Errorf("%s: verdict %s, tests %+v, reasons %+v; want %s with reason %s", c.name, rep.Verdict, rep.Tests, rep.Reasons, c.want, c.why)
		}
	}
}
