package editorstest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNeovimPlugin runs nvim-plugin/tests headless against the real
// bcode-ls on the fixture repository: attach, diagnostics for the surviving
// mutant, and each command.
func TestNeovimPlugin(t *testing.T) {
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	ls := bcodeLS(t)
	f := NewFixture(t)
	dir := filepath.Join(repoRoot(t), "nvim-plugin")
	cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile tests/run.lua")
	cmd.Dir = dir
	cmd.Env = append(f.Env(ls), "BCODE_APPEND_EVENT_CMD="+appendEventCommand(t))
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "# pass") {
			t.Log(l)
		}
	}
	if err != nil {
		t.Fatalf("nvim tests failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), " fail 0 ") {
		t.Fatalf("no test summary from nvim:\n%s", out)
	}
}

// TestNeovimServerLifecycle runs nvim-plugin/tests/lifecycle.lua headless
// against the real bcode-ls on a fresh fixture: :checkhealth bcode from the
// user's buffer, the server killed (one notification with its exit signal
// and last stderr line), :BcodeRestart (diagnostics again), a stop the
// user asked for (no notification), one "bcode: " prefix on every message.
func TestNeovimServerLifecycle(t *testing.T) {
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	ls := bcodeLS(t)
	f := NewFixture(t)
	cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile tests/run.lua")
	cmd.Dir = filepath.Join(repoRoot(t), "nvim-plugin")
	cmd.Env = append(f.Env(ls), "BCODE_TEST_FILES=lifecycle.lua")
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "# pass") {
			t.Log(l)
		}
	}
	if err != nil || !strings.Contains(string(out), " fail 0 ") {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
}

// TestNeovimMissingServer: with no bcode-ls, opening Go files in Neovim says
// once how to install it, raises no error, and :checkhealth bcode agrees.
func TestNeovimMissingServer(t *testing.T) {
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	f := NewFixture(t)
	cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile tests/missing_server.lua")
	cmd.Dir = filepath.Join(repoRoot(t), "nvim-plugin")
	cmd.Env = f.Env("/nonexistent/bcode-ls")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 1 fail 0") {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
}
