package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
)

// packRepo is a real git checkout with two packages, one calling the other.
func packRepo(t *testing.T) string {
	t.Helper()
	return testrepo.FromFiles(t, map[string]string{
		"go.mod":            "module example.com/calc\n\ngo 1.22\n",
		"AGENTS.md":         "Keep functions small.\n",
		"num/num.go":        "package num\n\n// Double doubles.\nfunc Double(x int) int {\n\treturn 2 * x\n}\n",
		"calc/calc.go":      "package calc\n\nimport \"example.com/calc/num\"\n\n// Quad quadruples.\nfunc Quad(x int) int {\n\treturn num.Double(num.Double(x))\n}\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestQuad(t *testing.T) {\n\tif Quad(1) != 4 {\n\t\tt.Fatal(Quad(1))\n\t}\n}\n",
	}).Dir
}

func runPack(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(append([]string{"pack", "--tokenizer", "http://127.0.0.1:1"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestPackCommand(t *testing.T) {
	repo := packRepo(t)
	state := t.TempDir()
	code, out, errOut := runPack(t, "--repo", repo, "--state", state, "--selection", "num/num.go:5-5", "--goal", "make Double overflow-safe", "--budget", "2000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"## Selection: num/num.go:5-5", "func Double(x int) int {", "calc/calc.go:5-8 (caller", "TestQuad(t *testing.T)", "Keep functions small.", "tokens estimated: http://127.0.0.1:1 not reachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("pack lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "re-indexed") {
		t.Errorf("no summary on stderr: %s", errOut)
	}

	// A second run reuses the index in the ledger and gives the same pack.
	code, out2, errOut := runPack(t, "--repo", repo, "--state", state, "--selection", "num/num.go:5-5", "--goal", "make Double overflow-safe", "--budget", "2000")
	if code != 0 || out2 != out {
		t.Fatalf("second run: exit %d, same output %v: %s", code, out2 == out, errOut)
	}
	if !strings.Contains(errOut, "2 reused, 0 re-indexed") {
		t.Errorf("second run did not reuse the stored index: %s", errOut)
	}

	code, js, errOut := runPack(t, "--repo", repo, "--state", state, "--goal", "Quad", "--json", "--budget", "1000")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var p struct {
		Sections []struct{ Title string }
		Total    int
		Budget   int
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, js)
	}
	if p.Budget != 1000 || p.Total > 1000 || len(p.Sections) == 0 {
		t.Fatalf("json pack: %+v", p)
	}
}

func TestPackCommandErrors(t *testing.T) {
	repo := packRepo(t)
	state := t.TempDir()
	notRepo := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--repo", repo}, "nothing to pack for"},
		{[]string{"--repo", repo, "--selection", "num/num.go"}, "want FILE:L1-L2"},
		{[]string{"--repo", repo, "--selection", "num/num.go:a-b"}, "not L1-L2 with whole numbers"},
		{[]string{"--repo", repo, "--selection", "num/num.go:5-2"}, "want 1 <= L1 <= L2"},
		{[]string{"--repo", repo, "--selection", "/etc/passwd:1-2"}, "outside the repository"},
		{[]string{"--repo", repo, "--selection", "../x.go:1-2"}, "outside the repository"},
		{[]string{"--repo", repo, "--selection", "num/num.go:1-99"}, "out of range: num/num.go has 6 lines"},
		{[]string{"--repo", repo, "--selection", "num/none.go:1-1"}, "cannot be read"},
		{[]string{"--repo", notRepo, "--goal", "x"}, "is not a git repository"},
		{[]string{"--repo", repo, "--goal", "x", "--budget", "10"}, `invalid value "10" for flag -budget: out of range: give a whole number from 200 to 10000000`},
	} {
		code, _, errOut := runPack(t, append(tc.args, "--state", state)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
