package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
)

// Worker is a long-running runner over a shared ledger (`bcode runner`):
// it claims the oldest runnable task, builds a Runner for it, runs it to
// its end, and claims the next, until ctx ends. Several workers, in
// several processes on several machines, share one ledger; each task is
// claimed by one of them at a time, and a worker that dies leaves its task
// to the next claim once its lease is stale.
type Worker struct {
	Engine *task.Engine
	// Build makes the Runner for one claimed task (its agent, checker and
	// model endpoint come from the task's base configuration). An error
	// gives the task back (the lease is released) and the worker waits a
	// Poll before claiming again.
	Build func(ctx context.Context, t engine.Task) (*Runner, error)
	// Holder is who this worker is; zero: this process.
	Holder ledger.Holder
	// Poll is how long an idle worker waits before claiming again; zero: 1s.
	Poll time.Duration
	// OnResult, when set, is told how each run ended.
	OnResult func(res *Result, err error)
}

// Serve claims and runs tasks until ctx ends, and returns ctx's error.
func (w *Worker) Serve(ctx context.Context) error {
	if w.Engine == nil || w.Build == nil {
		return errors.New("runner: Worker needs an Engine and a Build")
	}
	holder := w.Holder
	if holder.Owner == "" {
		holder = ledger.LocalHolder("")
	}
	poll := w.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for ctx.Err() == nil {
		res, err := w.once(ctx, holder)
		if errors.Is(err, ledger.ErrNothingRunnable) || (err != nil && res == nil) {
			if err != nil && !errors.Is(err, ledger.ErrNothingRunnable) && w.OnResult != nil {
				w.OnResult(nil, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
			continue
		}
		if w.OnResult != nil {
			w.OnResult(res, err)
		}
	}
	return ctx.Err()
}

// once claims one task and runs it.
func (w *Worker) once(ctx context.Context, holder ledger.Holder) (*Result, error) {
	lease, rec, err := w.Engine.ClaimNext(ctx, holder)
	if err != nil {
		return nil, err
	}
	t, err := w.Engine.Ledger.Task(ctx, lease.TaskID)
	if err != nil {
		w.Engine.Ledger.Release(context.WithoutCancel(ctx), lease)
		return nil, err
	}
	r, err := w.Build(ctx, *t)
	if err != nil {
		w.Engine.Ledger.Release(context.WithoutCancel(ctx), lease)
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	r.Engine, r.Holder = w.Engine, holder
	return r.RunClaimed(ctx, lease, rec)
}
