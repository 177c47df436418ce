package task_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
)

// TestTwoStateDirsShareARepository: runners with their own state
// directories take one task over from each other in the same repository
// (two runner processes on one machine sharing a ledger). The second adds
// its worktree although the branch is checked out in the first one's; when
// the first comes back, its worktree is behind the branch: its files are
// kept under refs/bcode/kept/, never committed on the branch, so the
// second runner's work is not undone.
func TestTwoStateDirsShareARepository(t *testing.T) {
	ctx := context.Background()
	repo, e1 := setup(t)
	e1.TTL = 200 * time.Millisecond
	e1.StateDir = t.TempDir()
	e2 := task.New(e1.Ledger)
	e2.TTL, e2.StateDir = e1.TTL, t.TempDir()
	tk, err := e1.Create(ctx, task.CreateInput{Repo: repo, Goal: "g"})
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := ledger.LocalHolder("runner-1"), ledger.LocalHolder("runner-2")

	l1, _, err := e1.Claim(ctx, tk.ID, h1)
	if err != nil {
		t.Fatal(err)
	}
	wt1, err := e1.PrepareWorktree(ctx, tk, l1, task.Limits(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt1.Dir, "one.txt", "runner 1, never committed\n")

	time.Sleep(300 * time.Millisecond) // runner 1 stalls past its TTL
	l2, _, err := e2.Claim(ctx, tk.ID, h2)
	if err != nil {
		t.Fatal(err)
	}
	wt2, err := e2.PrepareWorktree(ctx, tk, l2, task.Limits(config.Default()))
	if err != nil {
		t.Fatalf("the second state dir's worktree, with the branch checked out in the first's: %v", err)
	}
	write(t, wt2.Dir, "two.txt", "runner 2\n")
	lim, err := task.CheckpointLimits(ctx, wt2, tk)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := task.Commit(ctx, wt2, tk.Branch, "turn", task.Trailers{Task: tk.ID, Attempt: 1, Turn: 1, Fence: l2.Fence}, lim)
	if err != nil || cp.Commit == "" {
		t.Fatalf("runner 2's checkpoint: %+v %v", cp, err)
	}
	if err := e2.Ledger.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}

	l3, rec, err := e1.Claim(ctx, tk.ID, h1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Kept) != 1 || rec.RecoveryCommit != "" {
		t.Fatalf("recovery of the stale worktree: %+v", rec)
	}
	if head := git(t, repo, "rev-parse", "refs/heads/"+tk.Branch); head != cp.Commit {
		t.Fatalf("the branch moved from runner 2's %s to %s", cp.Commit, head)
	}
	kept := git(t, repo, "for-each-ref", "--format=%(refname)", "refs/bcode/kept/")
	if !strings.Contains(kept, tk.ID) {
		t.Fatalf("no kept ref: %q", kept)
	}
	if got := git(t, repo, "show", strings.TrimSpace(kept)+":one.txt"); got != "runner 1, never committed" {
		t.Fatalf("kept one.txt = %q", got)
	}
	if _, err := os.Stat(wt1.Dir); !os.IsNotExist(err) {
		t.Fatalf("the stale worktree is still there: %v", err)
	}
	wt3, err := e1.PrepareWorktree(ctx, tk, l3, task.Limits(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(wt3.Dir, "two.txt")); err != nil || string(b) != "runner 2\n" {
		t.Fatalf("runner 1's new worktree lacks runner 2's work: %q %v", b, err)
	}
}
