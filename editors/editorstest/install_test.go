package editorstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The install tests run editors/install.sh as a user would on a fresh
// machine: a new HOME (no Neovim packages, no VS Code extensions), Go's
// binaries into a directory of the test, and then the editor itself on
// what was installed.

// installScript is editors/install.sh of this checkout.
func installScript(t *testing.T) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "editors", "install.sh")
}

// withEnv is env with each KEY=VALUE of set in place of the KEY's old
// value, and without the keys of unset.
func withEnv(env []string, unset []string, set ...string) []string {
	drop := map[string]bool{}
	for _, k := range unset {
		drop[k] = true
	}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// freshHomeEnv is this process's environment with HOME=home and no XDG
// base directories (so they all lie under home), Go's binaries going to
// bin, and Go's caches, module cache and settings file those of this
// machine: the build cache keeps `go install ./cmd/...` to linking, and a
// new HOME would otherwise mean new, empty ones.
func freshHomeEnv(t *testing.T, home, bin string) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 4 {
		t.Fatalf("go env printed %q", out)
	}
	return withEnv(os.Environ(),
		[]string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"},
		"HOME="+home, "GOBIN="+bin,
		"GOCACHE="+v[0], "GOMODCACHE="+v[1], "GOPATH="+v[2], "GOENV="+v[3])
}

// runInstall runs editors/install.sh with args in a directory of its own
// (the script finds the checkout from its own path) and returns its
// stdout, its stderr and its exit code.
func runInstall(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(installScript(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("editors/install.sh %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// TestInstallUsage: no editor, or one it does not know, is a usage line
// on stderr and exit code 2, before anything is installed.
func TestInstallUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"emacs"}, {"vscode", "neovim"}} {
		stdout, stderr, code := runInstall(t, os.Environ(), args...)
		if code != 2 || !strings.Contains(stderr, "usage: ") || !strings.Contains(stderr, "vscode|neovim") || stdout != "" {
			t.Errorf("install.sh %q: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", args, code, stdout, stderr)
		}
	}
}

// neovimAttached is run by nvim after init.lua (which holds only
// require('bcode').setup{}) and the fixture's Go file: it waits for the
// bcode-ls client to initialize and attach to the buffer, and prints the
// server's executable.
const neovimAttached = `
local lsp = require('bcode.lsp')
local found
local ok = vim.wait(60000, function()
  for _, c in ipairs(vim.lsp.get_active_clients()) do
    if c.name == lsp.name and lsp.initialized[c.id] and vim.lsp.buf_is_attached(0, c.id) then
      found = c
      return true
    end
  end
  return false
end, 100)
if ok then
  io.stdout:write('bcode attached: ' .. found.config.cmd[1] .. '\n')
  vim.cmd('qall!')
else
  local msgs = vim.api.nvim_exec('messages', true)
  io.stdout:write('bcode did not attach; clients: ' .. vim.inspect(vim.tbl_map(function(c) return c.name end, vim.lsp.get_active_clients())) .. '; messages: ' .. msgs .. '\n')
  vim.cmd('cquit 1')
end
`

// TestInstallNeovim runs `editors/install.sh neovim` with a new HOME, then
// a headless Neovim whose init.lua is the one line the script prints, on a
// Go file of the fixture: the plugin loads from the package the script
// made, and the bcode-ls it installed attaches and initializes, once on
// PATH and once only in $GOBIN (where the plugin looks as well).
func TestInstallNeovim(t *testing.T) {
	if testing.Short() {
		t.Skip("go install ./cmd/... and an editor: not in -short")
	}
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	tmp := t.TempDir()
	home, bin := filepath.Join(tmp, "home"), filepath.Join(tmp, "bin")
	env := freshHomeEnv(t, home, bin)
	stdout, stderr, code := runInstall(t, env, "neovim")
	if code != 0 {
		t.Fatalf("install.sh neovim: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("install.sh neovim:\n%s", stdout)
	const setupLine = "require('bcode').setup{}"
	if !strings.Contains(stdout, setupLine) {
		t.Errorf("install.sh neovim does not print the line for init.lua, %s", setupLine)
	}
	link := filepath.Join(home, ".local", "share", "nvim", "site", "pack", "bcode", "start", "bcode")
	if target, err := os.Readlink(link); err != nil || target != filepath.Join(repoRoot(t), "nvim-plugin") {
		t.Errorf("the plugin's link %s -> %q (%v), want the checkout's nvim-plugin", link, target, err)
	}
	for _, name := range []string{"bcode", "bcode-ls", "bcode-agent"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Errorf("go install ./cmd/... left no %s in GOBIN: %v", name, err)
		}
	}
	// Run twice, it replaces its own link.
	if stdout, stderr, code := runInstall(t, env, "neovim"); code != 0 {
		t.Fatalf("install.sh neovim, again: exit %d\n%s\n%s", code, stdout, stderr)
	}

	f := NewFixture(t)
	initLua := filepath.Join(tmp, "init.lua")
	check := filepath.Join(tmp, "attached.lua")
	if err := os.WriteFile(initLua, []byte(setupLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(check, []byte(neovimAttached), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(bin, "bcode-ls")
	for _, c := range []struct{ name, path, want string }{
		{"on PATH", bin + string(os.PathListSeparator) + pathWithout(os.Getenv("PATH"), "bcode-ls"), "bcode-ls"},
		{"only in GOBIN", pathWithout(os.Getenv("PATH"), "bcode-ls"), want},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("nvim", "--headless", "-u", initLua, "-i", "NONE", filepath.Join(f.Repo, "quota", "quota.go"), "-c", "luafile "+check)
			cmd.Dir = f.Repo
			cmd.Env = withEnv(env, nil, "PATH="+c.path, "BCODE_STATE="+f.State)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "bcode attached: "+c.want+"\n") {
				t.Fatalf("nvim with the installed plugin: %v\n%s", err, out)
			}
		})
	}
}

// pathWithout is the PATH list without the directories that hold name.
func pathWithout(list, name string) string {
	var keep []string
	for _, dir := range filepath.SplitList(list) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// codeServer is editors/vscode-e2e's code-server, set up, or a skip (a
// failure with BCODE_REQUIRE_ALL=1) saying how to get it.
func codeServer(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("node")
	need(t, err == nil, "node", "install Node.js 20 (apt-get install nodejs npm)")
	dir := filepath.Join(repoRoot(t), "editors", "vscode-e2e")
	_, err = os.Stat(filepath.Join(dir, "node_modules", "code-server", "lib", "vscode", ".bcode-setup-done"))
	need(t, err == nil, "code-server (editors/vscode-e2e)", "run `npm ci && npm run setup` in editors/vscode-e2e (needs g++, make, python3 and ripgrep: apt-get install build-essential ripgrep)")
	return filepath.Join(dir, "node_modules", ".bin", "code-server")
}

var vsixPath = regexp.MustCompile(`\S+\.vsix`)

// TestInstallVSCode runs `editors/install.sh vscode` with a new HOME and
// CODE=code-server (a VS Code whose extensions live under HOME): the
// extension it packaged is then in code-server's list, at the version of
// vscode-extension/package.json. Without a `code` to run (CODE=/nonexistent)
// it exits 1, says to set CODE=, and leaves the .vsix it names.
func TestInstallVSCode(t *testing.T) {
	if testing.Short() {
		t.Skip("go install ./cmd/..., npm and code-server: not in -short")
	}
	ext := vscodeDir(t) // with node_modules, so the script runs no npm ci beside other tests
	cs := codeServer(t)
	var pkg struct{ Name, Publisher, Version string }
	b, err := os.ReadFile(filepath.Join(ext, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	home, bin := filepath.Join(tmp, "home"), filepath.Join(tmp, "bin")
	if err := os.Mkdir(filepath.Join(tmp, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := withEnv(freshHomeEnv(t, home, bin), nil, "TMPDIR="+filepath.Join(tmp, "tmp"))

	stdout, stderr, code := runInstall(t, withEnv(env, nil, "CODE="+cs), "vscode")
	if code != 0 {
		t.Fatalf("install.sh vscode: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("install.sh vscode:\n%s", stdout)
	if _, err := os.Stat(filepath.Join(bin, "bcode-ls")); err != nil {
		t.Errorf("go install ./cmd/... left no bcode-ls in GOBIN: %v", err)
	}
	list := exec.Command(cs, "--list-extensions", "--show-versions")
	list.Env = env
	out, err := list.CombinedOutput()
	want := pkg.Publisher + "." + pkg.Name + "@" + pkg.Version
	if err != nil || !strings.Contains(string(out), want+"\n") {
		t.Fatalf("code-server --list-extensions: %v, want %s in:\n%s", err, want, out)
	}

	stdout, stderr, code = runInstall(t, withEnv(env, nil, "CODE=/nonexistent"), "vscode")
	if code != 1 || !strings.Contains(stderr, "CODE=code-server") {
		t.Fatalf("install.sh vscode without code: exit %d, want 1 and a message naming CODE=\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	vsix := vsixPath.FindString(stderr)
	if vsix == "" {
		t.Fatalf("install.sh vscode without code names no .vsix:\n%s", stderr)
	}
	if _, err := os.Stat(vsix); err != nil {
		t.Errorf("the .vsix it names for a manual install is gone: %v", err)
	}
}
