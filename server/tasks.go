package server

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/backend"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/verify"
)

// TaskEngine is what the server needs of bcode's task engine. Reads come
// from the ledger; the lifecycle (create, run, resume, cancel, accept,
// reject) belongs to the task engine, which must do exactly what `bcode
// task ...` does.
type TaskEngine interface {
	// CanRun is nil when Run and Resume can work in this build, else an
	// error saying what is missing and how to get it; checked before a run
	// is started in the background, so the request itself fails clearly.
	CanRun() error
	List(ctx context.Context, repo string) ([]engine.Task, error)
	Get(ctx context.Context, id string) (*engine.Task, error)
	Attempts(ctx context.Context, id string) ([]engine.Attempt, error)
	Events(ctx context.Context, id string, afterSeq int64, limit int) ([]engine.Event, error)
	// LatestEvents is the newest limit events of task id after afterSeq,
	// oldest first, and how many older ones after afterSeq it left out.
	LatestEvents(ctx context.Context, id string, afterSeq int64, limit int) (events []engine.Event, omitted int, err error)
	Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error)

	Create(ctx context.Context, repo string, req TaskRequest) (*engine.Task, error)
	// Run and Resume work until the task stops (verified, blocked, failed,
	// cancelled); the server calls them in the background.
	Run(ctx context.Context, id string, p verify.Progress) error
	Resume(ctx context.Context, id string, p verify.Progress) error
	Cancel(ctx context.Context, id string) error
	Accept(ctx context.Context, id string, force bool) error
	Reject(ctx context.Context, id string) error
	// ApproveModule is the user's yes to a module.approval_needed event:
	// the host may fetch that module version for the task (path@version).
	ApproveModule(ctx context.Context, id, module string) (string, error)
}

// TaskRequest is a new task.
type TaskRequest struct {
	Goal      string
	Selection *engine.Selection
	Criteria  []string
	Base      string // "" = the default base
}

// ledgerTasks is the task engine over the ledger in the state dir: reads
// straight from the ledger (never creating it), the lifecycle through
// engine/task and engine/runner, exactly as `bcode task ...` does.
type ledgerTasks struct {
	Path  string              // "" = ledger.DefaultPath()
	Agent runner.AgentBackend // builds each task's agent; nil: tasks cannot run
	// Shared is the user's choice of a shared ledger (--ledger of bcode-ls,
	// $BCODE_LEDGER or ~/.config/bcode/ledger, never the repository's); a
	// zero Choice is the SQLite file at Path.
	Shared backend.Choice

	mu  sync.Mutex
	led ledger.Store
}

func (t *ledgerTasks) open(ctx context.Context) (ledger.Store, error) {
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
	l, err := backend.Open(ctx, t.Shared, path)
	if err != nil {
		if t.Shared.IsShared() {
			return nil, fmt.Errorf("opening the task ledger %s: %w", t.Shared, err)
		}
		return nil, fmt.Errorf("opening the task ledger %s: %w", path, err)
	}
	t.led = l
	return l, nil
}

// exists reports whether the ledger file is there, so a server that never
// saw a task does not create one just to poll it.
func (t *ledgerTasks) exists() bool {
	if t.Shared.IsShared() {
		return true // a database server: opening it creates nothing here
	}
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

func (t *ledgerTasks) LatestEvents(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int, error) {
	if limit <= 0 {
		return nil, 0, fmt.Errorf("LatestEvents: limit %d must be positive", limit)
	}
	if !t.exists() {
		return nil, 0, nil
	}
	l, err := t.open(ctx)
	if err != nil {
		return nil, 0, err
	}
	return l.LatestEvents(ctx, id, after, limit)
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

// by names who did a lifecycle operation, in the ledger's events.
const by = "bcode-ls"

func (t *ledgerTasks) engine(ctx context.Context) (*task.Engine, error) {
	l, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return task.New(l), nil
}

func (t *ledgerTasks) CanRun() error { return runner.Options{Agent: t.Agent}.Available() }

func (t *ledgerTasks) Create(ctx context.Context, repo string, req TaskRequest) (*engine.Task, error) {
	e, err := t.engine(ctx)
	if err != nil {
		return nil, err
	}
	in := task.CreateInput{Repo: repo, Goal: req.Goal, Base: req.Base, Criteria: req.Criteria}
	if req.Selection != nil {
		in.Selection = &task.Range{File: req.Selection.File, StartLine: req.Selection.StartLine, EndLine: req.Selection.EndLine}
	}
	return e.Create(ctx, in)
}

func (t *ledgerTasks) Run(ctx context.Context, id string, p verify.Progress) error {
	e, err := t.engine(ctx)
	if err != nil {
		return err
	}
	_, err = runner.RunTask(ctx, e, id, runner.Options{Agent: t.Agent, Progress: p})
	return err
}

func (t *ledgerTasks) Resume(ctx context.Context, id string, p verify.Progress) error {
	e, err := t.engine(ctx)
	if err != nil {
		return err
	}
	_, err = runner.ResumeTask(ctx, e, id, engine.Budgets{}, runner.Options{Agent: t.Agent, Progress: p})
	return err
}

func (t *ledgerTasks) ApproveModule(ctx context.Context, id, mod string) (string, error) {
	led, err := t.open(ctx)
	if err != nil {
		return "", err
	}
	if _, err := led.Task(ctx, id); err != nil {
		return "", err
	}
	mv, err := agentbackend.ApproveModule(ctx, led, id, mod)
	if err != nil {
		return "", err
	}
	return mv.Path + "@" + mv.Version, nil
}

func (t *ledgerTasks) Cancel(ctx context.Context, id string) error {
	e, err := t.engine(ctx)
	if err != nil {
		return err
	}
	return e.Cancel(ctx, id, by)
}

func (t *ledgerTasks) Accept(ctx context.Context, id string, force bool) error {
	e, err := t.engine(ctx)
	if err != nil {
		return err
	}
	_, err = e.Accept(ctx, id, task.AcceptOptions{Force: force, By: by})
	return err
}

func (t *ledgerTasks) Reject(ctx context.Context, id string) error {
	e, err := t.engine(ctx)
	if err != nil {
		return err
	}
	_, err = e.Reject(ctx, id, by)
	return err
}

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
