package agentbackend

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/internal/testenv"
)

// TestInstallRunsATask follows the README's setup on a machine with
// nothing of bcode's installed: `go install ./cmd/...` into an empty GOBIN,
// then `bcode doctor` and a task against the scripted model, with only
// GOBIN and the system directories on PATH and no BCODE_AGENT. bcode must
// find the bcode-agent that one command installed, and the task must end
// verified.
func TestInstallRunsATask(t *testing.T) {
	if testing.Short() {
		t.Skip("installs every command and runs a task in Docker; skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the agent's container runs on Linux")
	}
	requireSandbox(t) // Docker and the test image
	goBin := testenv.Go(t)
	gobin := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	install := exec.Command(goBin, "install", "./cmd/...")
	install.Dir = root
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/...: %v\n%s", err, out)
	}
	t.Logf("go install ./cmd/...: %s", time.Since(start).Round(time.Millisecond))
	ents, err := os.ReadDir(gobin)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "bcode bcode-agent bcode-ls" {
		t.Fatalf("GOBIN after go install ./cmd/...: %s", got)
	}

	model := modeltest.New(modeltest.Options{Tools: true},
		editor(map[string]any{"command": "str_replace", "path": "calc.go", "old_str": "\treturn x\n", "new_str": "\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n"}),
		editor(map[string]any{"command": "str_replace", "path": "calc_test.go", "old_str": "func TestAbsPositive", "new_str": "func TestAbsNegative(t *testing.T) {\n\tif got := Abs(-4); got != 4 {\n\t\tt.Fatalf(\"Abs(-4) = %d, want 4\", got)\n\t}\n}\n\nfunc TestAbsPositive"}),
		finish("Abs negates negative input; TestAbsNegative covers it."),
	)
	f := newFixture(t, "e2e-abs", model, nil)
	f.bin = gobin
	// Only GOBIN and the system's directories: no bcode-agent from
	// anywhere else, and the go command for the host-side steps.
	path := gobin + string(os.PathListSeparator) + filepath.Dir(goBin) + string(os.PathListSeparator) + "/usr/bin:/bin"
	env := []string{"PATH=" + path, AgentEnv + "="}

	out, errOut, _ := f.bcode(env, "doctor")
	if !strings.Contains(out, "ok   agent    "+filepath.Join(gobin, "bcode-agent")) {
		t.Fatalf("bcode doctor does not report the installed agent:\n%s%s", out, errOut)
	}
	id := f.create("Abs returns negative numbers unchanged; make it return the absolute value.")
	task, out, errOut := f.runTask(env, id)
	if task["status"] != string(engine.TaskVerified) {
		t.Fatalf("task status %v, want verified\n%s%s\n%s", task["status"], out, errOut, f.agentLogs())
	}
	t.Logf("install to verified task: %s", time.Since(start).Round(time.Millisecond))
}

// TestAgentVersionMismatch: a binary that is not bcode's agent is refused
// with the fix, without running it.
func TestAgentVersionMismatch(t *testing.T) {
	goBin := testenv.Go(t)
	_, err := CheckAgentVersion(goBin)
	if !errors.Is(err, ErrAgentMismatch) || !strings.Contains(err.Error(), InstallHint) {
		t.Fatalf("CheckAgentVersion(%s) = %v, want ErrAgentMismatch naming %q", goBin, err, InstallHint)
	}
	if _, err := CheckAgentVersion(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrAgentMismatch) {
		t.Fatalf("a missing file: %v", err)
	}
}
