package testrepo_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
)

func TestFromTxtarCommitsTheArchive(t *testing.T) {
	t.Setenv("GIT_DIR", "/nonexistent") // the environment's GIT_* never leak in
	r := testrepo.FromTxtar(t, "a comment\n-- go.mod --\nmodule example.com/m\n-- sub/a.go --\npackage sub\n")
	if got := r.Git("rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("branch %q, want main", got)
	}
	if got := r.Git("ls-tree", "-r", "--name-only", "HEAD"); got != "go.mod\nsub/a.go" {
		t.Errorf("base commit holds %q", got)
	}
	if got := r.Git("log", "--format=%an <%ae> %s"); got != "t <t@example.com> base" {
		t.Errorf("log %q", got)
	}
	r.WriteFile("sub/a.go", "package sub\n\nvar X = 1\n")
	head := r.Commit("head")
	if got := r.Git("rev-parse", "HEAD"); got != head {
		t.Errorf("Commit returned %s, HEAD is %s", head, got)
	}
	data, err := os.ReadFile(filepath.Join(r.Dir, "sub", "a.go"))
	if err != nil || string(data) != "package sub\n\nvar X = 1\n" {
		t.Errorf("sub/a.go = %q, %v", data, err)
	}
	if out, err := r.GitErr("rev-parse", "nosuchrev"); err == nil {
		t.Errorf("rev-parse of a missing revision succeeded: %s", out)
	}
}
