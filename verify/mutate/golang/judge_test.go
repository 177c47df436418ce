package golang

import (
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestJudgeFailure: how a covering run that exited non-zero becomes a
// verdict. A panic or fatal error the runtime reports is the mutated code
// failing under a test (a nil map write, an index out of range, a stack
// overflow from a mutated recursion bound), so that test killed it; a
// binary that vanished mid-test with no such report was stopped from
// outside, which says nothing about the mutant.
func TestJudgeFailure(t *testing.T) {
	cases := []struct {
		name           string
		stdout, stderr string
		verdict        mutate.Verdict
		killedBy       string
	}{
		{"failure line", "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n", "", mutate.Killed, "TestA"},
		{"panic in the test", "=== RUN   TestA\n=== RUN   TestA/sub\npanic: runtime error: index out of range [3] with length 3\n\ngoroutine 7 [running]:\n", "", mutate.Killed, "TestA"},
		{"panic in a goroutine it started", "=== RUN   TestB\n", "panic: boom\n\ngoroutine 19 [running]:\n", mutate.Killed, "TestB"},
		{"fatal error", "=== RUN   TestC\n", "fatal error: stack overflow\n", mutate.Killed, "TestC"},
		{"died with no report", "=== RUN   TestD\n", "signal: killed\n", mutate.NoVerdict, ""},
		{"panic text inside a line is not the runtime's", "=== RUN   TestE\n    log: saw panic: nothing\n", "", mutate.NoVerdict, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &mutant{}
			judgeFailure(m, sandbox.Result{Stdout: []byte(c.stdout), Stderr: []byte(c.stderr), ExitCode: 2}, nil)
			if m.Verdict != c.verdict || m.KilledBy != c.killedBy {
				t.Errorf("verdict %s by %q, want %s by %q (detail %q)", m.Verdict, m.KilledBy, c.verdict, c.killedBy, m.Detail)
			}
		})
	}
}
