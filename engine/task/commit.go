package task

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
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
	// Worktree, for a recovery commit: the fence in the name of the
	// worktree it was made from (see newestCommitFence).
	Worktree int64
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
	if t.Worktree > 0 {
		fmt.Fprintf(&b, "Bcode-Worktree: %d\n", t.Worktree)
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
		case "Bcode-Worktree":
			t.Worktree = n
		}
	}
	return t
}

// Checkpoint is what Commit made.
type Checkpoint struct {
	Commit string // "" when nothing changed
	Parent string
	// Skipped is what the worktree held that the commit did not take in
	// (nested repositories, files over the caps, fifos...), each with why.
	Skipped []git.Skipped
}

// Commit writes the worktree wt (opened with git.Repo.LinkedWorktree, on
// branch) as a commit on the branch when its tree differs from the branch
// head's. The tree is built by bcode from the files themselves
// (git.Repo.SnapshotTree): no porcelain runs over the worktree, no nested
// repository is entered, and lim caps what is taken in.
//
// The branch moves by compare-and-swap from the head this call read
// (update-ref NEW OLD), so a commit never lands on top of one it did not
// see: a runner that was taken over, and whose successor already moved the
// branch, fails here instead of writing over the successor's work.
func Commit(ctx context.Context, wt *git.Repo, branch, subject string, tr Trailers, lim git.Limits) (Checkpoint, error) {
	commit, parent, skipped, err := wt.Checkpoint(ctx, git.CheckpointSpec{
		Branch:      branch,
		Message:     subject + "\n\n" + tr.String(),
		Config:      identity,
		BeforeRef:   func() { crashpoint.Hit("checkpoint.before-ref") },
		BeforeIndex: func() { crashpoint.Hit("checkpoint.before-index") },
	}, lim)
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{Commit: commit, Parent: parent, Skipped: skipped}, nil
}

// Limits are the checkpoint caps of the base commit's configuration.
func Limits(cfg config.Config) git.Limits {
	return git.Limits{MaxFileBytes: cfg.Task.MaxFileBytes, MaxTotalBytes: cfg.Task.MaxCheckpointBytes}
}

// CheckpointLimits reads the checkpoint caps from the task's base commit.
func CheckpointLimits(ctx context.Context, user *git.Repo, t *engine.Task) (git.Limits, error) {
	cfg, err := BaseConfig(ctx, user, t.Base)
	if err != nil {
		return git.Limits{}, err
	}
	return Limits(cfg), nil
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
