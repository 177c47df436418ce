package check_test

import (
	"context"
	"os"
	"path/filepath"
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
	r := clampFixRepo(t, map[string]string{".bcode/config.toml": "[gate]\npython = \"/usr/bin/python3\"\n"})
	rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD", Runner: host.New()})
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

// TestGatePythonEvidenceRunsUnderTheGatesInterpreter: the mutants run under
// the interpreter the gate's own runs chose. Here that is the user's
// checkout .venv (untracked, so in no snapshot), which only the gate's
// Python adapter knows to look for; the evidence used to probe on its own
// and ran python3 instead, so a project whose dependencies live in that
// .venv could not import under its mutants.
func TestGatePythonEvidenceRunsUnderTheGatesInterpreter(t *testing.T) {
	testenv.SystemPytest(t)
	r := clampFixRepo(t, map[string]string{".gitignore": ".venv/\n"})
	log := filepath.Join(t.TempDir(), "venv-python.log")
	venvPython(t, r.dir, "echo \"$*\" >> "+log)
	rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD", Runner: host.New()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verify.Verified {
		t.Fatalf("verdict %s, want verified: reasons %+v mutants %+v", rep.Verdict, rep.Reasons, rep.Mutants)
	}
	if m := rep.Mutants; m == nil || m.CreditedKills == 0 {
		t.Fatalf("mutation summary %+v: want a credited kill", m)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the checkout's .venv python never ran: %v", err)
	}
	var pytest, mutants int
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(line, "pymutate.py"):
			mutants++
		case strings.Contains(line, "-m pytest"):
			pytest++
		}
	}
	if pytest == 0 || mutants == 0 {
		t.Errorf("the .venv python ran %d pytest runs and %d mutation engine processes, want both:\n%s", pytest, mutants, data)
	}
}

// clampFixRepo is a Python repository whose head commit fixes clamp and
// adds the test that fails before the fix; extra files go into its base.
func clampFixRepo(t *testing.T, extra map[string]string) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	files := map[string]string{
		"shop/__init__.py":    "",
		"shop/clamp.py":       "def clamp(x, lo, hi):\n    return x\n",
		"tests/test_clamp.py": "from shop.clamp import clamp\n\n\ndef test_mid():\n    assert clamp(5, 0, 10) == 5\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	r.write(files)
	r.commit("base")
	r.write(map[string]string{
		"shop/clamp.py":       "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n",
		"tests/test_clamp.py": "from shop.clamp import clamp\n\n\ndef test_mid():\n    assert clamp(5, 0, 10) == 5\n\n\ndef test_outside():\n    assert clamp(-5, 0, 10) == 0\n    assert clamp(15, 0, 10) == 10\n",
	})
	r.commit("head")
	return r
}

// TestAgentCheckNeverRunsTheCheckoutVenv is the attack on the change above:
// an agent's worktree is hostile, so a .venv/bin/python planted in it
// (untracked, as the user's own would be) must run neither the gate's tests
// nor its mutants. With a task ID the gate never looks at the checkout, and
// the evidence takes the gate's choice, so the planted interpreter stays
// unrun while the evidence still runs under python3.
func TestAgentCheckNeverRunsTheCheckoutVenv(t *testing.T) {
	testenv.SystemPytest(t)
	r := clampFixRepo(t, map[string]string{".gitignore": ".venv/\n"})
	planted := filepath.Join(t.TempDir(), "planted-python-ran")
	venvPython(t, r.dir, "touch "+planted)
	rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD", Runner: host.New(), TaskID: "task-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verify.Verified || rep.Mutants == nil || rep.Mutants.CreditedKills == 0 {
		t.Fatalf("verdict %s, mutants %+v: want verified with a credited kill", rep.Verdict, rep.Mutants)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Error("the .venv python planted in an agent's checkout ran")
	}
}

// venvPython puts a .venv/bin/python into dir that runs the shell line
// first and then /usr/bin/python3 with its arguments.
func venvPython(t *testing.T, dir, line string) {
	t.Helper()
	venv := filepath.Join(dir, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + line + "\nexec /usr/bin/python3 \"$@\"\n"
	if err := os.WriteFile(filepath.Join(venv, "python"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
}
