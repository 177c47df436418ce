package check_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// TestGatePythonEvidence: a Python fix with a test that fails before and
// passes after is verified only through mutation evidence of its own: the
// gate mutates the changed .py lines and the credited test kills a mutant
// (before, the gate said the changed lines had no mutable code).
func TestGatePythonEvidence(t *testing.T) {
	testenv.SystemPytest(t)
	r := newGitRepo(t)
	r.write(map[string]string{
		".bcode/config.toml":  "[gate]\npython = \"/usr/bin/python3\"\n",
		"shop/__init__.py":    "",
		"shop/clamp.py":       "def clamp(x, lo, hi):\n    return x\n",
		"tests/test_clamp.py": "from shop.clamp import clamp\n\n\ndef test_mid():\n    assert clamp(5, 0, 10) == 5\n",
	})
	r.commit("base")
	r.write(map[string]string{
		"shop/clamp.py":       "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n",
		"tests/test_clamp.py": "from shop.clamp import clamp\n\n\ndef test_mid():\n    assert clamp(5, 0, 10) == 5\n\n\ndef test_outside():\n    assert clamp(-5, 0, 10) == 0\n    assert clamp(15, 0, 10) == 10\n",
	})
	r.commit("head")
	rep, err := check.Run(context.Background(), check.Options{Repo: r.dir, Base: "HEAD~1", Head: "HEAD", Runner: host.New()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verify.Verified {
		t.Fatalf("verdict %s, want verified: reasons %+v tests %+v mutants %+v", rep.Verdict, rep.Reasons, rep.Tests, rep.Mutants)
	}
	m := rep.Mutants
	if m == nil || len(m.Mutants) == 0 || m.Note != "" {
		t.Fatalf("mutation summary %+v: want mutants of the changed Python lines", m)
	}
	if m.CreditedKills == 0 {
		t.Errorf("the credited test_outside kills no mutant: %+v", m.Mutants)
	}
	for _, mv := range m.Mutants {
		if mv.File != "shop/clamp.py" {
			t.Errorf("mutant of %s: only shop/clamp.py changed code", mv.File)
		}
		if mv.Verdict == "killed" && !strings.HasPrefix(mv.KilledBy, "tests/test_clamp.py::") {
			t.Errorf("killed by %q: want a pytest test name", mv.KilledBy)
		}
	}
}
