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

// TestNotRunBefore: after an ordered run stopped in a test, the tests a run
// in source order would have run before it are the earlier ones in the
// file that did not pass in the ordered run (subtests and the tests after
// it do not count).
func TestNotRunBefore(t *testing.T) {
	tests := []string{"TestA", "TestB", "TestC", "TestD"}
	cases := []struct {
		name, out string
		want      []string
	}{
		{"stopped in C; D passed", "=== RUN   TestD\n--- PASS: TestD (0.00s)\n=== RUN   TestC\n=== RUN   TestC/sub\n", []string{"TestA", "TestB"}},
		{"stopped in C; B passed", "=== RUN   TestB\n--- PASS: TestB (0.00s)\n=== RUN   TestC\n", []string{"TestA"}},
		{"stopped in the first test of the file", "=== RUN   TestD\n--- PASS: TestD (0.00s)\n=== RUN   TestA\n", nil},
		{"a skipped test passed", "=== RUN   TestA\n--- SKIP: TestA (0.00s)\n=== RUN   TestD\n", []string{"TestB", "TestC"}},
		{"nothing started", "panic: init\n", nil},
	}
	for _, c := range cases {
		got := notRunBefore(tests, c.out)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
