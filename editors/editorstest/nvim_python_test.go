package editorstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNeovimPythonSurvivor: Neovim with the plugin and the real bcode-ls
// shows a surviving Python mutant as a diagnostic after a save.
func TestNeovimPythonSurvivor(t *testing.T) {
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	need(t, exec.Command("/usr/bin/python3", "-I", "-c", "import pytest").Run() == nil, "pytest", "apt-get install python3-pytest")
	ls := bcodeLS(t)
	repo := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=fixture", "-c", "user.email=fixture@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	const price = "def discount(n):\n    \"\"\"The discount in percent for a basket of n items.\"\"\"\n    if n >= 10:\n        return 5\n    return 0\n"
	write("shop/__init__.py", "")
	write("shop/price.py", price)
	write("tests/test_price.py", "from shop.price import discount\n\n\ndef test_discount():\n    assert discount(20) == 5\n    assert discount(1) == 0\n")
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "base")
	write("shop/price.py", strings.Replace(price, "n >= 10", "n > 10", 1))

	cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile tests/python_survivor.lua")
	cmd.Dir = filepath.Join(repoRoot(t), "nvim-plugin")
	cmd.Env = append(os.Environ(), "BCODE_LS="+ls, "BCODE_PY_REPO="+repo, "BCODE_STATE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 1 fail 0") {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
}
