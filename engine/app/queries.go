package app

import (
	"context"
	"errors"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// TaskRow is a task with its newest event (nil: none yet), for a list of
// tasks.
type TaskRow struct {
	Task      engine.Task
	LastEvent *engine.Event
}

// TaskRows is the tasks of the checkout at repo, newest first, each with
// its newest event: two ledger reads however many tasks there are (the
// tasks, then every task's newest event in one query).
func (e *Engine) TaskRows(ctx context.Context, repo string) ([]TaskRow, error) {
	repo, err := checkoutDir(ctx, repo)
	if err != nil {
		return nil, err
	}
	l, err := e.reader(ctx)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return []TaskRow{}, nil // reads never create a ledger
	}
	ts, err := l.Tasks(ctx, repo)
	if err != nil {
		return nil, err
	}
	// As before, a list whose events cannot be read still lists its tasks.
	newest, _ := l.NewestEvents(ctx, repo)
	rows := make([]TaskRow, 0, len(ts))
	for _, t := range ts {
		row := TaskRow{Task: t}
		if ev, ok := newest[t.ID]; ok {
			row.LastEvent = &ev
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// LastSeq is the newest event sequence number of the checkout's tasks (0:
// none), where a follower of every task's events starts.
func (e *Engine) LastSeq(ctx context.Context, repo string) (int64, error) {
	rows, err := e.TaskRows(ctx, repo)
	if err != nil {
		return 0, err
	}
	var last int64
	for _, r := range rows {
		if r.LastEvent != nil {
			last = max(last, r.LastEvent.Seq)
		}
	}
	return last, nil
}

// TaskDetail is one task in full for a viewer: its attempts, its newest
// events and its last gate run.
type TaskDetail struct {
	Task     engine.Task
	Attempts []engine.Attempt // never nil
	// Events are the newest at most limit events after afterSeq, oldest
	// first (never nil); Omitted counts the older ones left out.
	Events       []engine.Event
	Omitted      int
	Verification *engine.VerificationRun // nil: never checked
	// Oracle is the task's reproduction (--reproduce); nil without one.
	Oracle *engine.Oracle
}

// TaskDetail reads task id for a viewer: limit events after afterSeq.
func (e *Engine) TaskDetail(ctx context.Context, id string, afterSeq int64, limit int) (*TaskDetail, error) {
	t, err := e.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &TaskDetail{Task: *t, Attempts: []engine.Attempt{}, Events: []engine.Event{}}
	if as, err := e.Attempts(ctx, t.ID); err == nil && as != nil {
		d.Attempts = as
	}
	evs, omitted, err := e.LatestEvents(ctx, t.ID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	if evs != nil {
		d.Events = evs
	}
	d.Omitted = omitted
	if vs, err := e.TaskVerifications(ctx, t.ID, 1); err == nil && len(vs) > 0 {
		d.Verification = &vs[0]
	}
	if d.Oracle, err = e.TaskOracle(ctx, t.ID); err != nil {
		return nil, err
	}
	return d, nil
}

// ChangeLimits bound what TaskChange reads, so a task that touches a
// large or binary file never costs its viewer megabytes.
type ChangeLimits = task.ChangeLimits

// CheckRepoPath refuses a path that is not a file of a repository as git
// takes it: relative to its top, with / between names, nothing leaving
// the tree and no .git component. A path given to TaskChange passes it
// first.
func CheckRepoPath(p string) error { return git.CheckPath(p) }

// TaskChange is task id's change within lim, for a viewer (path "": every
// file, else that one file), read with hardened git; the task comes back
// too, even when the change could not be read.
func (e *Engine) TaskChange(ctx context.Context, id, path string, lim ChangeLimits) (*engine.Task, *task.Change, error) {
	t, err := e.Task(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	c, err := task.ReadChange(ctx, t, path, lim)
	return t, c, err
}

// CheckoutRoot is the top directory of the git checkout holding dir; an
// error when dir is in none.
func CheckoutRoot(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", errors.New("app: no directory to find a git checkout in")
	}
	return checkoutDir(ctx, dir)
}

// ResolveRevision is rev's commit in the checkout holding dir.
func ResolveRevision(ctx context.Context, dir, rev string) (string, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	return repo.Resolve(ctx, rev)
}
