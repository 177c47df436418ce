package check_test

import (
	"context"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// loadCases are labelled cases the load test judges: a Go and a Python
// fix that verify with mutants of their changed code to run (6 and 2), a
// Go fix that fails on the head, and a Python change that hides a test
// (tampered).
var loadCases = []string{"go-ci-move", "py-class-method", "go-incorrect-fix", "py-skip-call"}

// TestVerdictsDoNotChangeWithLoad judges the same cases, mutation evidence
// included, at rest, with a CPU hog on every core, and with every derived
// deadline cut tenfold (sandbox.ScaleDeadlines), and requires the same
// verdicts each time: the deadlines come from what was measured and the
// load, a timeout is retried once, and evidence that cannot finish does
// not turn a verdict into error.
func TestVerdictsDoNotChangeWithLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("judges four cases three times with real go test, pytest and mutation evidence (≈2 min); skipped with -short")
	}
	testenv.Go(t)
	testenv.Need(t, testenv.HaveSystemPytest(), "Python cases: /usr/bin/python3 -m pytest is unavailable (apt-get install python3-pytest)")
	all, err := loadSuite(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	var cases []labelledCase
	for _, c := range all {
		if slices.Contains(loadCases, c.Name) {
			cases = append(cases, c)
		}
	}
	if len(cases) != len(loadCases) {
		t.Fatalf("found %d of the cases %v", len(cases), loadCases)
	}
	atRest := judgeAll(t, cases)
	for i, c := range cases {
		if atRest[i].Verdict != c.Verdict {
			t.Fatalf("%s at rest: verdict %s, label %s\n%s", c.Name, atRest[i].Verdict, c.Verdict, describe(atRest[i]))
		}
		// The verified cases ran mutation evidence: the part whose fixed
		// deadline made verdicts change with the load.
		if m := atRest[i].Mutants; c.Verdict == verify.Verified && (m == nil || len(m.Mutants) == 0) {
			t.Fatalf("%s at rest: no mutant ran (%+v): the test would not cover the evidence's deadlines", c.Name, m)
		}
	}
	t.Run("cpu hog on every core", func(t *testing.T) {
		stop := hogCPUs(t, runtime.NumCPU())
		defer stop()
		sameVerdicts(t, cases, atRest, judgeAll(t, cases))
	})
	t.Run("deadlines cut tenfold", func(t *testing.T) {
		defer sandbox.ScaleDeadlines(0.1)()
		sameVerdicts(t, cases, atRest, judgeAll(t, cases))
	})
}

// judgeAll runs the gate on each case in turn, each in a repository of
// its own.
func judgeAll(t *testing.T, cases []labelledCase) []*verify.Report {
	t.Helper()
	out := make([]*verify.Report, len(cases))
	for i, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
		dir := t.TempDir()
		if err := c.Build(ctx, dir); err != nil {
			cancel()
			t.Fatalf("%s: building the repository: %v", c.Name, err)
		}
		base, head := c.Revisions()
		start := time.Now()
		rep, err := check.Run(ctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: head, Runner: host.New()})
		cancel()
		if rep == nil {
			t.Fatalf("%s: no report: %v", c.Name, err)
		}
		mutants := 0
		if rep.Mutants != nil {
			mutants = len(rep.Mutants.Mutants)
		}
		t.Logf("%s: %s in %.1fs, %d mutants (%s)", c.Name, rep.Verdict, time.Since(start).Seconds(), mutants, sandbox.ReadLoad())
		noLoadMessages(t, c.Name, rep)
		out[i] = rep
	}
	return out
}

// sameVerdicts requires got's verdicts to be the ones at rest.
func sameVerdicts(t *testing.T, cases []labelledCase, atRest, got []*verify.Report) {
	t.Helper()
	for i, c := range cases {
		if got[i].Verdict != atRest[i].Verdict {
			t.Errorf("%s: verdict %s, at rest %s\n%s", c.Name, got[i].Verdict, atRest[i].Verdict, describe(got[i]))
		}
	}
}

// hogCPUs starts n processes that each keep a core busy, and returns the
// function that kills them (also run at the test's cleanup).
func hogCPUs(t *testing.T, n int) (stop func()) {
	t.Helper()
	var hogs []*exec.Cmd
	stop = func() {
		for _, c := range hogs {
			c.Process.Kill()
			c.Wait()
		}
		hogs = nil
	}
	t.Cleanup(stop)
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatalf("starting a CPU hog: %v", err)
		}
		hogs = append(hogs, c)
	}
	return stop
}

// noLoadMessages fails on what a deadline must never put before a user:
// exec's WaitDelay, or a red baseline, as the cause of a verdict.
func noLoadMessages(t *testing.T, name string, rep *verify.Report) {
	t.Helper()
	texts := []string{}
	for _, r := range rep.Reasons {
		texts = append(texts, r.Message)
	}
	if rep.Mutants != nil {
		texts = append(texts, rep.Mutants.Note)
	}
	for _, s := range texts {
		if strings.Contains(s, "WaitDelay") || strings.Contains(s, "is red") {
			t.Errorf("%s: %q", name, s)
		}
	}
}
