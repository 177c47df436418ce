package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// TestTaskCreateReproduce: `bcode task create --reproduce CMD` records
// the request without a goal of its own (one made from the tests), shows
// it in status, and refuses a command it cannot map to test IDs, or tests
// the base does not have, with exit 2 or 1 and nothing recorded.
func TestTaskCreateReproduce(t *testing.T) {
	repo := testrepo.FromFiles(t, map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.22\n",
		"calc/calc.go":      "package calc\n\nfunc Abs(x int) int { return x }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal()\n\t}\n}\n",
	}).Dir
	state := t.TempDir()
	code, out, errOut := runTaskCmd(t, repo, state, "create", "--reproduce", "go test ./calc -run TestAbs")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	_, out, _ = runTaskCmd(t, repo, state, "status", id)
	for _, w := range []string{"reproduce  go test ./calc -run TestAbs", "not pinned yet", "Make the failing test pass without changing it: ./calc (-run TestAbs)"} {
		if !strings.Contains(out, w) {
			t.Errorf("status does not say %q:\n%s", w, out)
		}
	}
	_, out, _ = runTaskCmd(t, repo, state, "status", id, "--json")
	var st task.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Oracle == nil || st.Oracle.Command != "go test ./calc -run TestAbs" || len(st.Oracle.Selectors) != 1 {
		t.Fatalf("status --json oracle: %+v %v", st.Oracle, err)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"create", "--reproduce", "make test"}, 1, "not a test command bcode can run by test ID"},
		{[]string{"create", "--reproduce", "go test ./calc -run TestAbs; rm -rf ."}, 1, "bcode runs no shell"},
		{[]string{"create", "--reproduce", "go test ./nosuch -run TestAbs"}, 1, "no Go test files in ./nosuch"},
		{[]string{"create", "--reproduce", "python3 -m pytest tests/test_x.py::test_y"}, 1, "tests/test_x.py is not in the base"},
		{[]string{"create"}, 2, "or a failing test command with --reproduce"},
	} {
		code, out, errOut := runTaskCmd(t, repo, state, c.args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d saying %q", c.args, code, out, errOut, c.code, c.says)
		}
	}
	if _, out, _ = runTaskCmd(t, repo, state, "status"); strings.Count(out, "\n") != 2 {
		t.Errorf("refused creates recorded tasks:\n%s", out)
	}
}
