package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// WorktreeAdd creates a linked working tree at dir on branch: a new branch
// starting at base, or the existing branch when there already is one (base
// is then ignored, so a resumed task keeps its commits). The checkout runs
// with the repository's filter drivers emptied and hooks off, like every
// command here.
func (r *Repo) WorktreeAdd(ctx context.Context, dir, branch, base string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("worktree directory %q: %w", dir, err)
	}
	if err := checkRev(branch); err != nil {
		return fmt.Errorf("worktree branch: %w", err)
	}
	if _, err := r.plumbing(ctx, invocation{args: []string{"check-ref-format", "--branch", branch}}); err != nil {
		return fmt.Errorf("worktree branch %q is not a valid branch name: %w", branch, err)
	}
	exists := true
	if _, err := r.plumbing(ctx, invocation{args: []string{"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}}); err != nil {
		var ge *Error
		if !errors.As(err, &ge) {
			return err
		}
		exists = false
	}
	args := []string{"worktree", "add", "--quiet"}
	if exists {
		args = append(args, "--", abs, branch)
	} else {
		commit, err := r.Resolve(ctx, base)
		if err != nil {
			return fmt.Errorf("worktree base: %w", err)
		}
		args = append(args, "-b", branch, "--", abs, commit)
	}
	if _, err := r.Git(ctx, args...); err != nil {
		return fmt.Errorf("creating worktree %s on branch %s: %w", abs, branch, err)
	}
	return nil
}

// WorktreeRemove removes the linked working tree at dir, with any changes
// left in it, and prunes git's record of it. A directory that is already
// gone is only pruned. It is RemoveLinkedWorktree: git never reads the
// directory (`git worktree remove` would read and trust its .git file).
func (r *Repo) WorktreeRemove(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("worktree directory %q: %w", dir, err)
	}
	return r.RemoveLinkedWorktree(ctx, abs)
}
