package app

import (
	"context"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/task"
)

// TaskRow is a task with its newest event (nil: none yet), for a list of
// tasks.
type TaskRow struct {
	Task      engine.Task
	LastEvent *engine.Event
}

// TaskRows is the tasks of the checkout at repo, newest first, each with
// its newest event. It reads one event per task (the ledger has no
// newest-event-of-each-task query yet).
func (e *Engine) TaskRows(ctx context.Context, repo string) ([]TaskRow, error) {
	ts, err := e.ListTasks(ctx, repo)
	if err != nil {
		return nil, err
	}
	rows := make([]TaskRow, 0, len(ts))
	for _, t := range ts {
		row := TaskRow{Task: t}
		if evs, _, err := e.LatestEvents(ctx, t.ID, 0, 1); err == nil && len(evs) > 0 {
			row.LastEvent = &evs[len(evs)-1]
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
	// The ledger lists a repository's runs newest first; the first of this
	// task's is its last.
	if vs, err := e.Verifications(ctx, t.Repo, 0); err == nil {
		for i := range vs {
			if vs[i].TaskID == t.ID {
				d.Verification = &vs[i]
				break
			}
		}
	}
	return d, nil
}

// TaskChange is task id's change within lim, for a viewer (path "": every
// file, else that one file), read with hardened git; the task comes back
// too, even when the change could not be read.
func (e *Engine) TaskChange(ctx context.Context, id, path string, lim task.ChangeLimits) (*engine.Task, *task.Change, error) {
	t, err := e.Task(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	c, err := task.ReadChange(ctx, t, path, lim)
	return t, c, err
}
