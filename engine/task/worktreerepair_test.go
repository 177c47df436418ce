package task

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/git"
)

// TestHalfWrittenWorktreeRecordIsRepaired: a runner killed inside `git
// worktree add` leaves a record whose commondir is empty, and every later
// git worktree command dies on it (CI, TestKillLoopPostgres: "failed to
// read .git/worktrees/…/commondir: Success"). The listing before an add
// removes such records and lists again.
func TestHalfWrittenWorktreeRecordIsRepaired(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q")
	run("commit", "-q", "--allow-empty", "-m", "a")
	run("worktree", "add", "-q", filepath.Join(dir, "killed"), "-b", "killed")
	run("worktree", "add", "-q", filepath.Join(dir, "healthy"), "-b", "healthy")
	if err := os.WriteFile(filepath.Join(repo, ".git", "worktrees", "killed", "commondir"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	user, err := git.Open(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := user.Git(ctx, "worktree", "list", "--porcelain"); err == nil {
		t.Fatal("control: git lists worktrees over a half-written record")
	}
	elsewhere, err := checkedOutElsewhere(ctx, user, "refs/heads/healthy", filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if !elsewhere {
		t.Error("the healthy worktree's branch is not seen as checked out elsewhere")
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "worktrees", "killed")); !os.IsNotExist(err) {
		t.Errorf("the half-written record is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "worktrees", "healthy", "commondir")); err != nil {
		t.Errorf("the healthy record was touched: %v", err)
	}
}
