package python

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

const pyStepHead = `def step(x):
    if x > 0:
        return x + 1
    return 0
`

// pyStallRepo is a repository whose change adds pkg/step.py and a test
// that first sleeps 30 s: on every run when marker is "", else only while
// the file marker does not exist (it creates it).
func pyStallRepo(t *testing.T, marker string) (string, *verify.Change) {
	t.Helper()
	testenv.Git(t)
	requirePytest(t)
	stall := "time.sleep(30)"
	if marker != "" {
		stall = fmt.Sprintf("if not os.path.exists(%q):\n        open(%q, 'w').close()\n        time.sleep(30)", marker, marker)
	}
	test := "import os\nimport time\n\nfrom pkg.step import step\n\n\ndef test_step():\n    " + stall + "\n    assert step(2) == 3\n    assert step(-1) == 0\n"
	repo := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, repo, map[string]string{
		"pkg/__init__.py":   "",
		"tests/__init__.py": "",
	}, map[string]string{
		"pkg/step.py":        pyStepHead,
		"tests/test_step.py": test,
	})
	return repo, change
}

// TestPythonSessionBaselineRetriesOnce: the baseline, a fork of the
// session, is killed at its deadline and run once more with the load's
// retry deadline, as a baseline process is (mutate.RunBaseline): a suite
// that stalls once still gets every verdict, one that stalls every time
// is a TimeoutError naming the run, never a red baseline. The deadlines
// are cut (sandbox.ScaleDeadlines) to make the first about two seconds.
func TestPythonSessionBaselineRetriesOnce(t *testing.T) {
	defer sandbox.ScaleDeadlines(float64(2*time.Second) / float64(mutate.BaselineFloor) / sandbox.ReadLoad().Factor())()
	opts := func() mutate.Options {
		return mutate.Options{Workers: 1, CacheDir: t.TempDir(), Python: "/usr/bin/python3", Files: []string{"pkg/step.py"}}
	}
	repo, change := pyStallRepo(t, filepath.Join(t.TempDir(), "stalled"))
	rep, err := runPy(context.Background(), host.New(), repo, change, opts(), verify.NoProgress{})
	if err != nil {
		t.Fatalf("a baseline that stalls once: %v", err)
	}
	if len(rep.Mutants) == 0 {
		t.Fatal("no mutants of pkg/step.py")
	}
	for _, m := range rep.Mutants {
		if m.Verdict != mutate.Killed && m.Verdict != mutate.Survived {
			t.Errorf("line %d %s %q: %s (%s), want a verdict from the retried baseline's coverage", m.Line, m.Operator, m.Mutated, m.Verdict, m.Detail)
		}
	}
	repo, change = pyStallRepo(t, "")
	_, err = runPy(context.Background(), host.New(), repo, change, opts(), verify.NoProgress{})
	var te *mutate.TimeoutError
	if !errors.As(err, &te) || te.Retry < 3*te.First {
		t.Fatalf("a baseline that stalls every time: %v, want a TimeoutError with a retry at least three times the first deadline", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "python baseline") || strings.Contains(msg, "red") {
		t.Errorf("%q: want it to name the python baseline, and not call a timeout red", msg)
	}
}
