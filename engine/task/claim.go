package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// Recovery is what a new holder found and repaired when it claimed a task
// an earlier holder had not released cleanly. It is the data of the
// task.recovered event.
type Recovery struct {
	PreviousOwner string    `json:"previous_owner,omitempty"`
	PreviousPID   int       `json:"previous_pid,omitempty"`
	PreviousFence int64     `json:"previous_fence,omitempty"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	// HolderDead: the previous holder is known dead (its pid is gone on
	// this machine, or it ran before this machine's last boot); otherwise
	// its lease went stale by TTL and it may still be running, fenced out.
	HolderDead bool `json:"holder_dead"`
	// SameOwner: the previous lease was this holder's own (a re-claim).
	SameOwner bool `json:"same_owner,omitempty"`
	// Orphaned are the numbers of attempts it left running, now interrupted.
	Orphaned []int `json:"orphaned_attempts"`
	// Phase is what it was doing, from its last event.
	Phase string `json:"phase"`
	// Adopted are commits it put on the branch but died before recording.
	Adopted []string `json:"adopted_commits,omitempty"`
	// RecoveryCommit keeps the edits it left uncommitted in its worktree.
	RecoveryCommit string   `json:"recovery_commit,omitempty"`
	RecoveredFiles []string `json:"recovered_files,omitempty"`
	// RemovedLocks are stale index.lock files removed once the holder was
	// known dead.
	RemovedLocks []string `json:"removed_locks,omitempty"`
	// Worktrees are the earlier holders' worktree directories found.
	Worktrees []string `json:"worktrees,omitempty"`
	// Kept are earlier worktrees the branch had moved past (a runner with
	// another state directory worked on the task after them): their
	// files are kept as a commit under refs/bcode/kept/ — never on the
	// branch, where they would undo the later work — and they are removed.
	Kept []string `json:"kept_worktrees,omitempty"`
	// Incomplete are worktrees whose creation never finished; they are
	// removed (they hold no work).
	Incomplete []string `json:"incomplete_worktrees,omitempty"`
}

// Found reports whether there was anything to recover.
func (r *Recovery) Found() bool {
	return r.PreviousOwner != "" || len(r.Orphaned) > 0 || len(r.Adopted) > 0 || r.RecoveryCommit != "" ||
		len(r.RemovedLocks) > 0 || len(r.Incomplete) > 0 || len(r.Kept) > 0
}

// Claim takes the task's lease for holder and brings the task to a state
// the new holder can trust: attempts the previous holder left running are
// closed as interrupted, commits it made but never recorded are adopted into
// the ledger, edits it left uncommitted become a recovery commit (never
// discarded), and stale index.lock files are removed once it is known dead.
// When there was anything to recover, a task.recovered event says what.
//
// A live lease of another holder is refused with an error wrapping
// engine.ErrLeaseHeld. On any error after the lease was taken, the lease
// is released again.
func (e *Engine) Claim(ctx context.Context, taskID string, holder ledger.Holder) (engine.Lease, *Recovery, error) {
	return e.claim(ctx, taskID, holder, false)
}

// ClaimNext is Claim for the oldest runnable task in the ledger (see
// ledger.Store.ClaimNext); ledger.ErrNothingRunnable when there is none.
func (e *Engine) ClaimNext(ctx context.Context, holder ledger.Holder) (engine.Lease, *Recovery, error) {
	lease, prev, err := e.Ledger.ClaimNext(ctx, holder, e.ttl())
	if err != nil {
		return engine.Lease{}, nil, err
	}
	crashpoint.Hit("lease.acquired")
	rec, err := e.recover(ctx, lease, prev, holder, false)
	if err != nil {
		e.Ledger.Release(context.WithoutCancel(ctx), lease)
		return engine.Lease{}, nil, err
	}
	return lease, rec, nil
}

// claim is Claim; with discard, the earlier holders' worktrees are not
// recovered (the caller is about to delete them with the branch), so
// nothing they hold can stop the claim.
func (e *Engine) claim(ctx context.Context, taskID string, holder ledger.Holder, discard bool) (engine.Lease, *Recovery, error) {
	lease, prev, err := e.Ledger.Acquire(ctx, taskID, holder, e.ttl())
	if err != nil {
		return engine.Lease{}, nil, err
	}
	crashpoint.Hit("lease.acquired")
	rec, err := e.recover(ctx, lease, prev, holder, discard)
	if err != nil {
		e.Ledger.Release(context.WithoutCancel(ctx), lease)
		return engine.Lease{}, nil, err
	}
	return lease, rec, nil
}

func (e *Engine) recover(ctx context.Context, lease engine.Lease, prev *engine.Lease, me ledger.Holder, discard bool) (*Recovery, error) {
	t, err := e.Ledger.Task(ctx, lease.TaskID)
	if err != nil {
		return nil, err
	}
	rec := &Recovery{Orphaned: []int{}}
	// A released lease has no holder left to fear: whoever held it
	// finished its git commands before releasing.
	rec.HolderDead = true
	// Every takeover is recorded with the lease it replaced, a holder
	// re-claiming its own task too (fence n to n+1: its lease went stale
	// while the ledger was unreachable, or its run stopped and its worker
	// claimed the task again). Its own earlier run has ended: it is this
	// process, which claims one task at a time.
	if prev != nil {
		rec.PreviousOwner, rec.PreviousPID, rec.PreviousFence = prev.Owner, prev.PID, prev.Fence
		rec.LastHeartbeat = prev.Heartbeat
		if prev.Owner == me.Owner {
			rec.SameOwner = true
		} else {
			rec.HolderDead = holderKnownDead(*prev, me)
		}
	}
	orphans, err := e.Ledger.InterruptOrphans(ctx, lease, t.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range orphans {
		rec.Orphaned = append(rec.Orphaned, a.Number)
	}
	events, err := e.Ledger.Events(ctx, t.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	rec.Phase = phaseOf(events, lease.Fence)

	user, err := git.Open(ctx, t.Repo)
	if err != nil {
		return nil, fmt.Errorf("task %s: its repository: %w", t.ID, err)
	}
	if err := e.adopt(ctx, user, t, lease, events, rec); err != nil {
		return nil, err
	}
	if !discard {
		if err := e.recoverWorktrees(ctx, user, t, lease, rec); err != nil {
			return nil, err
		}
	}
	if !rec.Found() {
		return rec, nil
	}
	crashpoint.Hit("recover.before-event")
	data, _ := json.Marshal(rec)
	if _, err := e.Ledger.Append(ctx, &lease, &engine.Event{TaskID: t.ID, Kind: EventRecovered, Data: data}); err != nil {
		return nil, err
	}
	return rec, nil
}

// adopt records every commit base..branch the ledger does not know: a
// runner that died between moving the branch and appending the event. The
// branch is the authority for what was done, the ledger for what it meant;
// adopting makes them agree without redoing the turn.
func (e *Engine) adopt(ctx context.Context, user *git.Repo, t *engine.Task, lease engine.Lease, events []engine.Event, rec *Recovery) error {
	commits, err := branchCommits(ctx, user, t)
	if err != nil || len(commits) == 0 {
		return err
	}
	recorded := RecordedCommits(events)
	for _, c := range commits {
		if recorded[c] {
			continue
		}
		msg, err := user.Git(ctx, "show", "-s", "--format=%B", c)
		if err != nil {
			return err
		}
		tr := ParseTrailers(string(msg))
		data, _ := json.Marshal(map[string]any{"commit": c, "attempt": tr.Attempt, "turn": tr.Turn, "made_under_fence": tr.Fence})
		if _, err := e.Ledger.Append(ctx, &lease, &engine.Event{TaskID: t.ID, Kind: EventAdopted, Data: data}); err != nil {
			return err
		}
		rec.Adopted = append(rec.Adopted, c)
	}
	return nil
}

// branchCommits lists base..branch oldest first; none when the branch does
// not exist yet.
func branchCommits(ctx context.Context, user *git.Repo, t *engine.Task) ([]string, error) {
	out, err := user.Git(ctx, "rev-list", "--reverse", t.Base+"..refs/heads/"+t.Branch)
	if err != nil {
		if _, verr := user.Git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+t.Branch); verr != nil {
			return nil, nil // no branch yet
		}
		return nil, fmt.Errorf("listing the commits of %s: %w", t.Branch, err)
	}
	return strings.Fields(string(out)), nil
}

// RecordedCommits is the set of commits the events record on the branch.
func RecordedCommits(events []engine.Event) map[string]bool {
	out := map[string]bool{}
	for _, ev := range events {
		if !commitKinds[ev.Kind] {
			continue
		}
		var d struct {
			Commit string `json:"commit"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Commit != "" {
			out[d.Commit] = true
		}
	}
	return out
}

// recoverWorktrees handles the directories earlier holders worked in: an
// unfinished `git worktree add` is removed, a stale index.lock is removed
// once its holder is known dead, and uncommitted edits on the task branch
// become a recovery commit.
func (e *Engine) recoverWorktrees(ctx context.Context, user *git.Repo, t *engine.Task, lease engine.Lease, rec *Recovery) error {
	dirs, err := e.worktreeDirs(t.ID)
	if err != nil {
		return err
	}
	fences := make([]int64, 0, len(dirs))
	for f := range dirs {
		if f < lease.Fence {
			fences = append(fences, f)
		}
	}
	if len(fences) == 0 {
		return nil
	}
	slices.Sort(fences)
	// A move interrupted between renaming the directory and rewriting
	// git's record of it is repaired first, from the repository's
	// records alone (nothing in the directories is read).
	var paths []string
	for _, f := range fences {
		paths = append(paths, dirs[f])
	}
	if _, err := user.RepairMoved(ctx, t.ID+"-f", paths); err != nil {
		return fmt.Errorf("task %s: repairing git's record of a moved worktree: %w", t.ID, err)
	}
	var lim git.Limits
	// The newest fence that put a commit on the branch: a worktree of an
	// older fence is behind the branch (possible when runners with other
	// state directories share the repository).
	newest, err := newestCommitFence(ctx, user, t)
	if err != nil {
		return err
	}
	for _, f := range fences {
		dir := dirs[f]
		rec.Worktrees = append(rec.Worktrees, dir)
		wt, err := user.LinkedWorktree(ctx, dir)
		if err != nil && !errors.Is(err, git.ErrNotLinked) {
			return fmt.Errorf("task %s: the earlier worktree %s cannot be opened (%v); its edits are kept there: move them aside and remove it", t.ID, dir, err)
		}
		if wt == nil || initializing(wt) {
			if err := user.RemoveLinkedWorktree(ctx, dir); err != nil {
				return fmt.Errorf("removing the unfinished worktree %s: %w", dir, err)
			}
			rec.Incomplete = append(rec.Incomplete, dir)
			continue
		}
		if f < newest {
			if lim == (git.Limits{}) {
				if lim, err = CheckpointLimits(ctx, user, t); err != nil {
					return err
				}
			}
			if err := e.keepStale(ctx, user, t, dir, f, rec, lim); err != nil {
				return err
			}
			continue
		}
		if lim == (git.Limits{}) {
			if lim, err = CheckpointLimits(ctx, user, t); err != nil {
				return err
			}
		}
		if err := e.keepLeftEdits(ctx, wt, t, lease, dir, f, lim, rec); err != nil {
			return err
		}
	}
	return nil
}

// keepLeftEdits commits what the runner of fence f left uncommitted in its
// worktree wt (on the task branch) as a recovery commit, and records it.
func (e *Engine) keepLeftEdits(ctx context.Context, wt *git.Repo, t *engine.Task, lease engine.Lease, dir string, f int64, lim git.Limits, rec *Recovery) error {
	if err := e.clearIndexLock(ctx, wt, rec); err != nil {
		return err
	}
	head, err := wt.LinkedHead(ctx)
	if err != nil || head != "refs/heads/"+t.Branch {
		return nil // not on the task branch: nothing of the task's to keep
	}
	if clean, err := cleanWorktree(ctx, wt, head, lim); err != nil {
		return fmt.Errorf("task %s: reading the edits left in %s: %w", t.ID, dir, err)
	} else if clean {
		// Nothing left uncommitted; the index may still be the commit
		// before (the runner died between moving the branch and updating
		// it).
		if err := wt.ResetIndex(ctx, head); err != nil {
			return fmt.Errorf("task %s: setting the index of %s to its branch: %w", t.ID, dir, err)
		}
		return nil
	}
	crashpoint.Hit("recover.before-commit")
	old := f
	if rec.PreviousFence > 0 {
		old = rec.PreviousFence
	}
	cp, err := Commit(ctx, wt, t.Branch,
		fmt.Sprintf("bcode: keep edits left uncommitted under fence %d", f),
		Trailers{Task: t.ID, Fence: lease.Fence, Recovery: old, Worktree: f}, lim)
	if err != nil {
		return fmt.Errorf("task %s: committing the edits left in %s: %w", t.ID, dir, err)
	}
	if cp.Commit == "" {
		return nil
	}
	files, _ := changedFiles(ctx, wt, cp.Parent, cp.Commit)
	data, _ := json.Marshal(map[string]any{"commit": cp.Commit, "parent": cp.Parent, "files": files, "worktree": dir, "left_by_fence": f, "skipped": cp.Skipped})
	if _, err := e.Ledger.Append(ctx, &lease, &engine.Event{TaskID: t.ID, Kind: EventRecoveryCommit, Data: data}); err != nil {
		return err
	}
	rec.RecoveryCommit, rec.RecoveredFiles = cp.Commit, files
	return nil
}

// cleanWorktree: the worktree holds exactly the commit ref names, as a
// checkpoint would read it (never git status).
func cleanWorktree(ctx context.Context, wt *git.Repo, ref string, lim git.Limits) (bool, error) {
	out, err := wt.Git(ctx, "rev-parse", ref+"^{tree}")
	if err != nil {
		return false, err
	}
	tree, _, err := wt.SnapshotTree(ctx, ref, lim)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(out)) == tree, nil
}

// incompleteWorktree: `git worktree add` locks a new worktree with the
// reason "initializing" until its checkout is done; a lock still saying so
// means the adding process died, and the files are a partial checkout
// that must not be mistaken for edits. A directory the repository has no
// record of never became a worktree. Only the repository's records are
// read, never the directory's .git.
func incompleteWorktree(ctx context.Context, user *git.Repo, dir string) bool {
	wt, err := user.LinkedWorktree(ctx, dir)
	if err != nil {
		return errors.Is(err, git.ErrNotLinked)
	}
	return initializing(wt)
}

// initializing: the linked worktree's admin directory still has the lock
// `git worktree add` takes until its checkout is done.
func initializing(wt *git.Repo) bool {
	lock, err := sandbox.ReadFile(wt.GitDir, "locked", 64<<10)
	return err == nil && strings.Contains(string(lock), "initializing")
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// lockPatience bounds the wait for a possibly live, fenced-out holder to
// finish the git command that holds index.lock.
const lockPatience = 5 * time.Second

func (e *Engine) clearIndexLock(ctx context.Context, wt *git.Repo, rec *Recovery) error {
	lock := filepath.Join(wt.GitDir, "index.lock")
	if !fileExists(lock) {
		return nil
	}
	if rec.HolderDead {
		if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the stale %s: %w", lock, err)
		}
		rec.RemovedLocks = append(rec.RemovedLocks, lock)
		return nil
	}
	// The holder may still be alive (its lease went stale by TTL): a live
	// git process removes its own lock when it finishes, so wait for that
	// rather than pull the lock from under it.
	deadline := time.Now().Add(lockPatience)
	for fileExists(lock) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still held and its runner %s (pid %d) may be alive: if that process is gone, remove the lock file and run the task again",
				lock, rec.PreviousOwner, rec.PreviousPID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// holderKnownDead: prev ran on this machine in this boot and its process
// is gone, or it ran on this host before the last boot.
func holderKnownDead(prev engine.Lease, me ledger.Holder) bool {
	if prev.BootID != "" && prev.BootID == me.BootID {
		return prev.PID > 0 && !pidAlive(prev.PID)
	}
	host, _ := os.Hostname()
	prevHost, _, _ := strings.Cut(prev.Owner, "/")
	return prev.BootID != "" && me.BootID != "" && host != "" && prevHost == host
}

// pidAlive: /proc/<pid> exists and is not a zombie.
func pidAlive(pid int) bool {
	b, err := sandbox.ReadFile("/proc", strconv.Itoa(pid)+"/stat", 64<<10)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		// /proc unreadable for another reason: cannot judge, so alive,
		// and the lease's TTL decides.
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	st := b[i+2]
	return st != 'Z' && st != 'X'
}

// phaseOf says what the holder before fence was doing, from the last event
// an earlier fence wrote.
func phaseOf(events []engine.Event, fence int64) string {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.Fence == 0 || ev.Fence >= fence {
			continue
		}
		switch ev.Kind {
		case EventStarted, EventRecovered, EventRecoveryCommit, EventAdopted:
			return "starting"
		case EventAttemptStarted:
			return "building context"
		case EventContextBuilt, EventTurn:
			return "agent turns"
		case EventCheckStarted:
			return "check"
		case EventCheckFinished:
			return "verdict"
		case EventAttemptFinished:
			return "between attempts"
		default:
			return "after " + string(ev.Kind)
		}
	}
	return "not started"
}

// newestCommitFence is the newest worktree the commits base..branch were
// made from, by fence: a checkpoint's own fence (a holder checkpoints only
// from the worktree named by its fence), a recovery commit's Bcode-Worktree
// (the earlier worktree whose edits it kept). 0 when there are none (or no
// branch yet). A worktree of an older fence that still exists was left
// behind by the branch: within one state directory a newer holder moves the
// newest worktree to its own name before it checkpoints.
func newestCommitFence(ctx context.Context, user *git.Repo, t *engine.Task) (int64, error) {
	commits, err := branchCommits(ctx, user, t)
	if err != nil || len(commits) == 0 {
		return 0, err
	}
	out, err := user.Git(ctx, "log", "--format=%(trailers:key=Bcode-Fence,valueonly,separator=%x20)%x09%(trailers:key=Bcode-Worktree,valueonly,separator=%x20)",
		t.Base+"..refs/heads/"+t.Branch)
	if err != nil {
		return 0, fmt.Errorf("reading the fences of %s: %w", t.Branch, err)
	}
	var newest int64
	for _, line := range strings.Split(string(out), "\n") {
		fence, wt, _ := strings.Cut(line, "\t")
		src := strings.TrimSpace(wt)
		if src == "" {
			src = strings.TrimSpace(fence)
		}
		if n, err := strconv.ParseInt(src, 10, 64); err == nil && n > newest {
			newest = n
		}
	}
	return newest, nil
}

// keepStale keeps what an earlier worktree that the branch moved past
// holds, as a commit on top of the branch head under
// refs/bcode/kept/<task>/f<fence> (the branch itself is not moved: its
// newer work stays), and removes the worktree.
func (e *Engine) keepStale(ctx context.Context, user *git.Repo, t *engine.Task, dir string, fence int64, rec *Recovery, lim git.Limits) error {
	wt, err := user.LinkedWorktree(ctx, dir)
	if err == nil && !initializing(wt) {
		head := "refs/heads/" + t.Branch
		tree, _, err := wt.SnapshotTree(ctx, head, lim)
		if err != nil {
			return fmt.Errorf("task %s: reading the earlier worktree %s: %w", t.ID, dir, err)
		}
		out, err := user.Git(ctx, "rev-parse", head, head+"^{tree}")
		if err != nil {
			return err
		}
		revs := strings.Fields(string(out))
		if len(revs) == 2 && revs[1] != tree {
			msg := fmt.Sprintf("bcode: files left in the worktree of fence %d, which the branch moved past\n\n%s", fence,
				Trailers{Task: t.ID, Recovery: fence}.String())
			c, err := user.Git(ctx, append(slices.Clone(identity), "commit-tree", tree, "-p", revs[0], "-m", msg)...)
			if err != nil {
				return fmt.Errorf("task %s: keeping the files of %s: %w", t.ID, dir, err)
			}
			ref := fmt.Sprintf("refs/bcode/kept/%s/f%d", t.ID, fence)
			if _, err := user.Git(ctx, "update-ref", ref, strings.TrimSpace(string(c))); err != nil {
				return fmt.Errorf("task %s: keeping the files of %s: %w", t.ID, dir, err)
			}
		}
	}
	if err := user.RemoveLinkedWorktree(ctx, dir); err != nil {
		return fmt.Errorf("task %s: removing the earlier worktree %s: %w", t.ID, dir, err)
	}
	rec.Kept = append(rec.Kept, dir)
	return nil
}
