package task

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// PrepareWorktree gives the holder of lease its worktree of the task
// branch, at WorktreePath(task, fence): the newest earlier holder's
// directory is moved there (Claim already committed what it held), other
// leftovers are removed, and without any a new worktree is added. The
// branch bcode/<id> starts at the task's base the first time.
func (e *Engine) PrepareWorktree(ctx context.Context, t *engine.Task, lease engine.Lease) (*git.Repo, error) {
	user, err := git.Open(ctx, t.Repo)
	if err != nil {
		return nil, fmt.Errorf("task %s: its repository: %w", t.ID, err)
	}
	mine := e.WorktreePath(t.ID, lease.Fence)
	dirs, err := e.worktreeDirs(t.ID)
	if err != nil {
		return nil, err
	}
	if _, ok := dirs[lease.Fence]; ok {
		return openOnBranch(ctx, mine, t.Branch)
	}
	var old []int64
	for f := range dirs {
		if f < lease.Fence {
			old = append(old, f)
		}
	}
	slices.Sort(old)
	if err := os.MkdirAll(e.WorktreeRoot(), 0o700); err != nil {
		return nil, fmt.Errorf("worktree directory: %w", err)
	}
	moved := false
	for i := len(old) - 1; i >= 0; i-- {
		dir := dirs[old[i]]
		if !moved && !incompleteWorktree(dir) {
			if _, err := user.Git(ctx, "worktree", "move", dir, mine); err == nil {
				moved = true
				continue
			}
		}
		if err := removeClean(ctx, user, dir); err != nil {
			return nil, err
		}
	}
	if !moved {
		crashpoint.Hit("worktree.before-add")
		if err := user.WorktreeAdd(ctx, mine, t.Branch, t.Base); err != nil {
			return nil, err
		}
	}
	// Just added or moved with the branch checked out.
	return git.Open(ctx, mine)
}

// removeClean removes an earlier holder's worktree, but only when it holds
// no uncommitted edits: Claim committed those, so edits here mean it could
// not, and they are the user's to look at.
func removeClean(ctx context.Context, user *git.Repo, dir string) error {
	if wt, err := git.Open(ctx, dir); err == nil && !incompleteWorktree(dir) {
		out, err := wt.Git(ctx, "status", "--porcelain", "--untracked-files=all")
		if err != nil {
			return fmt.Errorf("reading %s: %w", dir, err)
		}
		if len(strings.TrimSpace(string(out))) > 0 {
			return fmt.Errorf("the earlier worktree %s has edits bcode could not commit: look at them and remove the directory", dir)
		}
	}
	if err := user.WorktreeRemove(ctx, dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func openOnBranch(ctx context.Context, dir, branch string) (*git.Repo, error) {
	wt, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	head, err := wt.Git(ctx, "symbolic-ref", "--quiet", "HEAD")
	if err != nil || strings.TrimSpace(string(head)) != "refs/heads/"+branch {
		return nil, fmt.Errorf("worktree %s is not on %s (HEAD %q)", dir, branch, strings.TrimSpace(string(head)))
	}
	return wt, nil
}

// RemoveWorktrees removes every worktree of the task, with what is in
// them; Reject and Accept call it once the branch holds everything.
func (e *Engine) removeWorktrees(ctx context.Context, user *git.Repo, taskID string) ([]string, error) {
	dirs, err := e.worktreeDirs(taskID)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, dir := range dirs {
		if err := user.WorktreeRemove(ctx, dir); err != nil {
			return removed, err
		}
		os.RemoveAll(dir)
		removed = append(removed, dir)
	}
	slices.Sort(removed)
	return removed, nil
}
