package python

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// TestPythonTreeDoesNotShadowPytest: the tree's own pytest.py, pluggy.py
// or unittest.py never runs in place of the system's: mutation evidence
// imports pytest and its plugins before any snapshot path is on sys.path,
// and puts those paths after the standard library, as the gate does. Each
// shadow would stop the run at import (before the fix, the baseline
// failed with "shadowed").
func TestPythonTreeDoesNotShadowPytest(t *testing.T) {
	testenv.Git(t)
	requirePytest(t)
	shadow := "raise SystemExit('shadowed: the tree ran in place of the system')\n"
	repo := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, repo, map[string]string{
		"pkg/__init__.py":   "",
		"tests/__init__.py": "",
		"setup.cfg":         "[tool:pytest]\ntestpaths = tests\n",
		"pytest.py":         shadow,
		"pluggy.py":         shadow,
		"unittest.py":       shadow,
	}, map[string]string{
		"pkg/calc.py":        "def small(n):\n    return n < 10\n",
		"tests/test_calc.py": "from pkg import calc\n\n\ndef test_small():\n    assert calc.small(9)\n    assert not calc.small(10)\n",
	})
	rep, err := runPy(context.Background(), host.New(), repo, change, mutate.Options{Workers: 1, CacheDir: t.TempDir(), TempDir: t.TempDir()}, verify.NoProgress{})
	if err != nil {
		t.Fatalf("mutation evidence over a tree with its own pytest.py: %v", err)
	}
	m := pyFind(t, rep, 2, mutate.OpConditionalBoundary, "n <= 10")
	if m.Verdict != mutate.Killed {
		t.Errorf("n < 10 -> n <= 10: %s (%s), want killed by the system's pytest", m.Verdict, m.Detail)
	}
}
