package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// PrepareWorktree gives the holder of lease its worktree of the task
// branch, at WorktreePath(task, fence): the newest earlier holder's
// directory is moved there (Claim already committed what it held), other
// leftovers are removed, and without any a new worktree is added. The
// branch bcode/<id> starts at the task's base the first time.
//
// The returned Repo is opened through the user's repository's records
// (git.Repo.LinkedWorktree), never by discovery from the directory: the
// agent writes the directory, its .git file included.
//
// lim are the checkpoint caps of the task's base configuration (Limits of
// the config the run read once): an earlier holder's worktree is only
// removed when a snapshot within them finds no edits.
func (e *Engine) PrepareWorktree(ctx context.Context, t *engine.Task, lease engine.Lease, lim git.Limits) (*git.Repo, error) {
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
		return openOnBranch(ctx, user, mine, t.Branch)
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
		if !moved && !incompleteWorktree(ctx, user, dir) {
			if err := user.MoveWorktree(ctx, dir, mine); err == nil {
				moved = true
				continue
			}
		}
		if err := removeClean(ctx, user, t, dir, lim); err != nil {
			return nil, err
		}
	}
	if !moved {
		crashpoint.Hit("worktree.before-add")
		if err := e.addWorktree(ctx, user, t, mine); err != nil {
			return nil, err
		}
	}
	// Just added or moved with the branch checked out.
	return user.LinkedWorktree(ctx, mine)
}

// removeClean removes an earlier holder's worktree, but only when it holds
// no uncommitted edits: Claim committed those, so edits here mean it could
// not, and they are the user's to look at. Whether it holds edits is
// decided by snapshotting it the checkpoint way, never by git status.
func removeClean(ctx context.Context, user *git.Repo, t *engine.Task, dir string, lim git.Limits) error {
	if wt, err := user.LinkedWorktree(ctx, dir); err == nil && !initializing(wt) {
		if head, err := wt.LinkedHead(ctx); err == nil && head == "refs/heads/"+t.Branch {
			clean, err := cleanWorktree(ctx, wt, head, lim)
			if err != nil {
				return fmt.Errorf("reading %s: %w", dir, err)
			}
			if !clean {
				return fmt.Errorf("the earlier worktree %s has edits bcode could not commit: look at them and remove the directory", dir)
			}
		}
	}
	return user.RemoveLinkedWorktree(ctx, dir)
}

func openOnBranch(ctx context.Context, user *git.Repo, dir, branch string) (*git.Repo, error) {
	wt, err := user.LinkedWorktree(ctx, dir)
	if err != nil {
		return nil, err
	}
	head, err := wt.LinkedHead(ctx)
	if err != nil || head != "refs/heads/"+branch {
		return nil, fmt.Errorf("worktree %s is not on %s (HEAD %q)", dir, branch, head)
	}
	return wt, nil
}

// removeWorktrees removes every worktree of the task, with what is in
// them; Reject and Accept call it once the branch holds everything. It
// deletes the directories itself and then prunes git's records, so nothing
// the agent left there (a .git file naming another repository, nested
// repositories, unreadable directories, fifos) can make it fail.
func (e *Engine) removeWorktrees(ctx context.Context, user *git.Repo, taskID string) ([]string, error) {
	dirs, err := e.worktreeDirs(taskID)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, dir := range dirs {
		if err := user.RemoveLinkedWorktree(ctx, dir); err != nil {
			return removed, err
		}
		removed = append(removed, dir)
	}
	slices.Sort(removed)
	return removed, nil
}

// addWorktree adds the holder's worktree of the task branch. When the
// branch is checked out in a worktree outside this state directory (a
// runner with another state directory on this machine held the task
// before), that worktree belongs to an earlier fence and is that runner's
// to clean up: the new one is added beside it (--force), since this
// holder's lease is the newer one.
func (e *Engine) addWorktree(ctx context.Context, user *git.Repo, t *engine.Task, dir string) error {
	elsewhere, err := checkedOutElsewhere(ctx, user, "refs/heads/"+t.Branch, e.WorktreeRoot())
	if err != nil || !elsewhere {
		if err != nil {
			return err
		}
		return user.WorktreeAdd(ctx, dir, t.Branch, t.Base)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := user.Git(ctx, "worktree", "add", "--quiet", "--force", "--", abs, t.Branch); err != nil {
		return fmt.Errorf("creating worktree %s on branch %s: %w", abs, t.Branch, err)
	}
	return nil
}

// checkedOutElsewhere reports whether ref is checked out in a linked
// worktree outside root, from the repository's own records.
func checkedOutElsewhere(ctx context.Context, user *git.Repo, ref, root string) (bool, error) {
	out, err := user.Git(ctx, "worktree", "list", "--porcelain")
	if err != nil && repairWorktreeRecords(ctx, user) > 0 {
		out, err = user.Git(ctx, "worktree", "list", "--porcelain")
	}
	if err != nil {
		return false, fmt.Errorf("listing worktrees: %w", err)
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var path string
	for _, line := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if b, ok := strings.CutPrefix(line, "branch "); ok && b == ref && filepath.Dir(path) != filepath.Clean(root) {
			return true, nil
		}
	}
	return false, nil
}

// repairWorktreeRecords removes the records a killed `git worktree add`
// left half written: a directory under the common dir's worktrees/ whose
// gitdir or commondir file is missing or empty. git writes both right
// after making the directory, and until they hold a path every git
// worktree command dies on the record ("failed to read .../commondir"),
// so a runner killed there (CI: the kill loop) would stop every later
// holder of any task in the repository from adding a worktree. It returns
// how many it removed. A live add is between those writes for a moment
// only; removing its record then fails that add, which its holder
// retries, where leaving a dead one fails every add.
func repairWorktreeRecords(ctx context.Context, user *git.Repo) int {
	out, err := user.Git(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return 0
	}
	records := filepath.Join(strings.TrimSpace(string(out)), "worktrees")
	ents, err := sandbox.ReadDir(records)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(records, e.Name())
		if recordFileSet(dir, "gitdir") && recordFileSet(dir, "commondir") {
			continue
		}
		if os.RemoveAll(dir) == nil {
			n++
		}
	}
	return n
}

// recordFileSet says whether a worktree record's file holds something.
func recordFileSet(dir, name string) bool {
	fi, err := os.Lstat(filepath.Join(dir, name))
	return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}
