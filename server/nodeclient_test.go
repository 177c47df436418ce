package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/server/fake"
)

// TestNodeClient runs server/nodeclient's test: Node's
// vscode-languageserver-protocol drives the built bcode-ls over stdio.
func TestNodeClient(t *testing.T) {
	needGo(t)
	node := testenv.Command(t, "node", "install Node.js 20 (apt-get install nodejs npm)")
	if _, err := os.Stat(filepath.Join("nodeclient", "node_modules", "vscode-languageserver-protocol")); err != nil {
		testenv.Missing(t, "run npm ci in server/nodeclient to install vscode-languageserver-protocol")
	}
	bin := filepath.Join(t.TempDir(), "bcode-ls")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/bcode-ls").CombinedOutput(); err != nil {
		t.Fatalf("building bcode-ls: %v\n%s", err, out)
	}
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	p := filepath.Join(dir, "price", "price.go")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), "n >= 10", "n > 10", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The Python repository: the same survivor in a .py file, when pytest
	// is installed (TestPythonSurvivorInTheEditor says how to get it).
	want := "pass 1"
	var pyRepo string
	if exec.Command("/usr/bin/python3", "-I", "-c", "import pytest").Run() == nil {
		pyRepo = fake.Repo(t, fixture(t, "pyboundary.txtar"))
		pp := filepath.Join(pyRepo, "shop", "price.py")
		src, err := os.ReadFile(pp)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pp, []byte(strings.Replace(string(src), "n >= 10", "n > 10", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		want = "pass 2"
	} else if testenv.RequireAll() {
		t.Fatal("/usr/bin/python3 cannot import pytest: apt-get install python3-pytest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "bcode-ls.test.mjs")
	cmd.Dir = "nodeclient"
	cmd.Env = append(os.Environ(), "BCODE_LS="+bin, "BCODE_REPO="+dir, "BCODE_PY_REPO="+pyRepo, "BCODE_STATE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("the node test did not pass:\n%s", out)
	}
	t.Logf("%s", out)
}
