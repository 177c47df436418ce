package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/verify"
)

// TaskEngine is what the server needs of bcode's task engine. Reads come
// from the ledger; the lifecycle (create, run, resume, cancel, accept,
// reject) belongs to the task engine, which must do exactly what `bcode
// task ...` does.
type TaskEngine interface {
	// Available is nil when the lifecycle operations work, else an error
	// saying what is missing and how to get it.
	Available() error
	List(ctx context.Context, repo string) ([]engine.Task, error)
	Get(ctx context.Context, id string) (*engine.Task, error)
	Attempts(ctx context.Context, id string) ([]engine.Attempt, error)
	Events(ctx context.Context, id string, afterSeq int64, limit int) ([]engine.Event, error)
	Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error)

	Create(ctx context.Context, repo string, req TaskRequest) (*engine.Task, error)
	// Run and Resume work until the task stops (verified, blocked, failed,
	// cancelled); the server calls them in the background.
	Run(ctx context.Context, id string, p verify.Progress) error
	Resume(ctx context.Context, id string, p verify.Progress) error
	Cancel(ctx context.Context, id string) error
	Accept(ctx context.Context, id string, force bool) error
	Reject(ctx context.Context, id string) error
}

// TaskRequest is a new task.
type TaskRequest struct {
	Goal      string
	Selection *engine.Selection
	Criteria  []string
	Base      string // "" = the default base
}

// ErrNoTaskEngine is what the task lifecycle commands answer while this
// build has no task engine wired in: a clear error, never a pretend result.
var ErrNoTaskEngine = errors.New("the task engine (engine/task: create, run, resume, cancel, accept, reject) is not part of this bcode-ls build yet; " +
	"tasks recorded by `bcode task` are still listed by bcode/tasks and bcode/task. Rebuild bcode-ls from a tree that has engine/task to run tasks from the editor")

// ledgerTasks reads tasks from the ledger in the state dir. The lifecycle
// operations answer ErrNoTaskEngine.
type ledgerTasks struct {
	Path string // "" = ledger.DefaultPath()

	mu  sync.Mutex
	led *ledger.Ledger
	err error
}

func (t *ledgerTasks) open(ctx context.Context) (*ledger.Ledger, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.led != nil {
		return t.led, nil
	}
	path := t.Path
	if path == "" {
		p, err := ledger.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	l, err := ledger.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening the task ledger %s: %w", path, err)
	}
	t.led = l
	return l, nil
}

// exists reports whether the ledger file is there, so a server that never
// saw a task does not create one just to poll it.
func (t *ledgerTasks) exists() bool {
	path := t.Path
	if path == "" {
		p, err := ledger.DefaultPath()
		if err != nil {
			return false
		}
		path = p
	}
	_, err := os.Stat(path)
	return err == nil
}

func (t *ledgerTasks) Available() error { return ErrNoTaskEngine }

func (t *ledgerTasks) List(ctx context.Context, repo string) ([]engine.Task, error) {
	if !t.exists() {
		return []engine.Task{}, nil // reading must not create a ledger
	}
	l, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return l.Tasks(ctx, repo)
}

func (t *ledgerTasks) Get(ctx context.Context, id string) (*engine.Task, error) {
	if !t.exists() {
		return nil, fmt.Errorf("task %q: %w", id, engine.ErrNotFound)
	}
	l, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return l.Task(ctx, id)
}

func (t *ledgerTasks) Attempts(ctx context.Context, id string) ([]engine.Attempt, error) {
	if !t.exists() {
		return nil, nil
	}
	l, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return l.Attempts(ctx, id)
}

func (t *ledgerTasks) Events(ctx context.Context, id string, after int64, limit int) ([]engine.Event, error) {
	if !t.exists() {
		return nil, nil
	}
	l, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return l.Events(ctx, id, after, limit)
}

func (t *ledgerTasks) Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error) {
	if !t.exists() {
		return nil, nil
	}
	l, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return l.Verifications(ctx, repo, limit)
}

func (t *ledgerTasks) Create(context.Context, string, TaskRequest) (*engine.Task, error) {
	return nil, ErrNoTaskEngine
}
func (t *ledgerTasks) Run(context.Context, string, verify.Progress) error    { return ErrNoTaskEngine }
func (t *ledgerTasks) Resume(context.Context, string, verify.Progress) error { return ErrNoTaskEngine }
func (t *ledgerTasks) Cancel(context.Context, string) error                  { return ErrNoTaskEngine }
func (t *ledgerTasks) Accept(context.Context, string, bool) error            { return ErrNoTaskEngine }
func (t *ledgerTasks) Reject(context.Context, string) error                  { return ErrNoTaskEngine }

// Close closes the ledger if it was opened.
func (t *ledgerTasks) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.led == nil {
		return nil
	}
	err := t.led.Close()
	t.led = nil
	return err
}
