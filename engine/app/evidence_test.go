package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// evidenceRepo is a Go module; the test below commits Pos on top of it
// with a test that pins its boundary, so every mutant of Pos is killed.
const evidenceRepo = `
-- go.mod --
module example.com/num

go 1.22
-- num.go --
package num

// Double doubles.
func Double(x int) int {
	return x * 2
}
-- num_test.go --
package num

import "testing"

func TestDouble(t *testing.T) {
	for _, x := range []int{-3, 0, 1, 5} {
		if got := Double(x); got != x*2 {
			t.Fatalf("Double(%d) = %d", x, got)
		}
	}
}
`

// TestEvidenceNothingToJudge: a clean checkout is reported as no change,
// with an empty report and no mutant run; asked for the last commit, the
// engine judges that instead and says so.
func TestEvidenceNothingToJudge(t *testing.T) {
	testenv.Go(t)
	ctx := context.Background()
	repo := testrepo.FromTxtar(t, evidenceRepo)
	parent := repo.Git("rev-parse", "HEAD")
	repo.WriteFile("pos.go", "package num\n\n// Pos reports whether x is positive.\nfunc Pos(x int) bool {\n\treturn x > 0\n}\n")
	repo.WriteFile("pos_test.go", "package num\n\nimport \"testing\"\n\nfunc TestPos(t *testing.T) {\n\tif Pos(0) || !Pos(1) || Pos(-1) {\n\t\tt.Fatal(Pos(0), Pos(1), Pos(-1))\n\t}\n}\n")
	repo.Commit("Pos")
	head := repo.Git("rev-parse", "HEAD")
	eng := app.Open(app.Options{})

	res, err := eng.Evidence(ctx, app.EvidenceRequest{Repo: repo.Dir, Base: "HEAD"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Mutants) != 0 || len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], "no change:") {
		t.Errorf("clean checkout: %d mutants, notes %q; want none and a no-change note", len(res.Report.Mutants), res.Notes)
	}

	res, err = eng.Evidence(ctx, app.EvidenceRequest{Repo: repo.Dir, LastCommit: true, Options: app.EvidenceOptions{Workers: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Base != strings.TrimSpace(parent) || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "the last commit") {
		t.Errorf("last commit: base %s (want %s), notes %q", res.Base, parent, res.Notes)
	}
	if len(res.Report.Mutants) == 0 || res.Report.Stats.Verdicts[mutate.Killed] == 0 || res.Report.Stats.Verdicts[mutate.Survived] != 0 {
		t.Errorf("last commit %s: %d mutants, verdicts %v; want some, all killed (notes %q, errors %q, pruned %v)", head, len(res.Report.Mutants), res.Report.Stats.Verdicts, res.Notes, res.Report.Errors, res.Report.Pruned)
	}
}

// TestEvidencePythonUsesTheCheckoutVenv: `bcode evidence` and bcode-ls on
// the user's own checkout run the Python mutants under its untracked
// .venv, as the gate's runs of their change do (the snapshot has no .venv:
// it is not in git).
func TestEvidencePythonUsesTheCheckoutVenv(t *testing.T) {
	testenv.SystemPytest(t)
	ctx := context.Background()
	repo := testrepo.FromTxtar(t, `
-- .gitignore --
.venv/
-- shop/__init__.py --
-- shop/clamp.py --
def clamp(x, lo, hi):
    return x
-- tests/test_clamp.py --
from shop.clamp import clamp


def test_mid():
    assert clamp(5, 0, 10) == 5
`)
	repo.WriteFile("shop/clamp.py", "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    return x\n")
	repo.WriteFile("tests/test_clamp.py", "from shop.clamp import clamp\n\n\ndef test_mid():\n    assert clamp(5, 0, 10) == 5\n\n\ndef test_low():\n    assert clamp(-5, 0, 10) == 0\n")
	repo.Commit("low bound")
	log := filepath.Join(t.TempDir(), "venv-python.log")
	repo.WriteFile(".venv/bin/python", "#!/bin/sh\necho \"$*\" >> "+log+"\nexec /usr/bin/python3 \"$@\"\n")
	if err := os.Chmod(filepath.Join(repo.Dir, ".venv", "bin", "python"), 0o755); err != nil {
		t.Fatal(err)
	}
	eng := app.Open(app.Options{})
	res, err := eng.Evidence(ctx, app.EvidenceRequest{Repo: repo.Dir, Base: "HEAD~1", Head: "HEAD", Options: app.EvidenceOptions{Workers: 1, CacheDir: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Stats.Verdicts[mutate.Killed] == 0 {
		t.Fatalf("verdicts %v (notes %q, errors %q): want a killed mutant", res.Report.Stats.Verdicts, res.Notes, res.Report.Errors)
	}
	data, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(data), "pymutate.py") {
		t.Errorf("the checkout's .venv python did not run the mutants (%v):\n%s", err, data)
	}
}
