package task

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// identity is who bcode's commits are by: explicit, so no user or system
// configuration is needed (hardened git reads none) and none is used.
var identity = []string{"-c", "user.name=bcode", "-c", "user.email=bcode@localhost"}

// Trailers name the task, attempt, turn and fence a commit was made for, so
// the branch itself says which turn each commit belongs to and a restart can
// tell a recorded commit from one whose runner died before recording it.
type Trailers struct {
	Task     string
	Attempt  int   // 0 for a recovery commit
	Turn     int   // 0 for a recovery commit
	Fence    int64 // the fence of the holder that made the commit
	Recovery int64 // for a recovery commit: the fence whose edits it keeps
}

func (t Trailers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Bcode-Task: %s\n", t.Task)
	if t.Attempt > 0 {
		fmt.Fprintf(&b, "Bcode-Attempt: %d\nBcode-Turn: %d\n", t.Attempt, t.Turn)
	}
	if t.Recovery > 0 {
		fmt.Fprintf(&b, "Bcode-Recovery: %d\n", t.Recovery)
	}
	fmt.Fprintf(&b, "Bcode-Fence: %d\n", t.Fence)
	return b.String()
}

// ParseTrailers reads the Bcode-* trailers of a commit message.
func ParseTrailers(msg string) Trailers {
	var t Trailers
	for _, line := range strings.Split(msg, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "Bcode-Task":
			t.Task = v
		case "Bcode-Attempt":
			t.Attempt = int(n)
		case "Bcode-Turn":
			t.Turn = int(n)
		case "Bcode-Fence":
			t.Fence = n
		case "Bcode-Recovery":
			t.Recovery = n
		}
	}
	return t
}

// Commit stages everything in the worktree wt (which has branch checked
// out) and, when the staged tree differs from HEAD's, commits it on the
// branch. The branch moves by compare-and-swap from the HEAD this call read
// (update-ref NEW OLD), so a commit never lands on top of one it did not
// see: a runner that was taken over, and whose successor already moved the
// branch, fails here instead of writing over the successor's work.
//
// It returns the new commit and its parent, or commit "" when nothing
// changed.
func Commit(ctx context.Context, wt *git.Repo, branch, subject string, tr Trailers) (commit, parent string, err error) {
	if _, err := wt.Git(ctx, "add", "--all"); err != nil {
		return "", "", fmt.Errorf("staging the worktree's changes: %w", err)
	}
	out, err := wt.Git(ctx, "write-tree")
	if err != nil {
		return "", "", fmt.Errorf("writing the worktree's tree: %w", err)
	}
	tree := strings.TrimSpace(string(out))
	out, err = wt.Git(ctx, "rev-parse", "HEAD", "HEAD^{tree}")
	if err != nil {
		return "", "", fmt.Errorf("reading the worktree's HEAD: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", "", fmt.Errorf("reading the worktree's HEAD: unexpected %q", out)
	}
	parent = f[0]
	if f[1] == tree {
		return "", parent, nil
	}
	msg := subject + "\n\n" + tr.String()
	args := append(append([]string(nil), identity...), "commit-tree", tree, "-p", parent, "-m", msg)
	out, err = wt.Git(ctx, args...)
	if err != nil {
		return "", "", fmt.Errorf("committing the worktree's changes: %w", err)
	}
	commit = strings.TrimSpace(string(out))
	crashpoint.Hit("checkpoint.before-ref")
	if _, err := wt.Git(ctx, "update-ref", "-m", "bcode checkpoint", "refs/heads/"+branch, commit, parent); err != nil {
		return "", "", fmt.Errorf("moving %s from %s to %s (did another runner move it?): %w", branch, short(parent), short(commit), err)
	}
	return commit, parent, nil
}

// changedFiles lists the paths commit changed against its parent.
func changedFiles(ctx context.Context, r *git.Repo, parent, commit string) ([]string, error) {
	out, err := r.Git(ctx, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", parent, commit)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			files = append(files, p)
		}
	}
	return files, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
