package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/backend"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// Event kinds a surface reports about a run it started (the ledger's own
// are engine.EventCreated and engine/task's).
const (
	// EventStartFailed: the run never got going (no model, no agent, no
	// Docker); RunTask and ResumeTask record it in the ledger
	// (task.EventStartFailed) with what is missing and the fix.
	EventStartFailed = task.EventStartFailed
	// EventStopped: the run returned; the task's status says how it ended.
	EventStopped engine.EventKind = "task.stopped"
	// EventModuleApprovalNeeded: the agent's change needs a module version
	// the base commit's go.sum does not list; ApproveModule is the user's
	// yes (engine/agentbackend records it).
	EventModuleApprovalNeeded = agentbackend.EventModuleApprovalNeeded
)

// TaskRequest is a new task.
type TaskRequest struct {
	// Repo is a directory inside the user's checkout.
	Repo      string
	Goal      string
	Selection *engine.Selection
	Criteria  []string
	Base      string // "": HEAD
	// Reproduce is a test command run on the base before any model call
	// (task.CreateInput.Reproduce).
	Reproduce string
}

// ledgerPath is where the SQLite ledger lives.
func (e *Engine) ledgerPath() (string, error) {
	if e.opts.LedgerPath != "" {
		return e.opts.LedgerPath, nil
	}
	return ledger.DefaultPath()
}

// ledgerExists reports whether the ledger is there, so a read (a server
// polling for tasks, a pack's history section) does not create one.
func (e *Engine) ledgerExists() bool {
	if e.opts.Ledger.IsShared() {
		return true // a database server: opening it creates nothing here
	}
	e.mu.Lock()
	open := e.led != nil
	e.mu.Unlock()
	if open {
		return true
	}
	p, err := e.ledgerPath()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// ledger opens the task ledger the engine was opened with, once; later
// calls return the same store. Close closes it.
func (e *Engine) ledger(ctx context.Context) (ledger.Store, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.led != nil {
		return e.led, nil
	}
	p, err := e.ledgerPath()
	if err != nil {
		return nil, err
	}
	// On SQLite the code index is the ledger's too (ledger.WithCodeIndex):
	// one handle keeps both, so a pack's index persists between packs.
	l, err := backend.Open(ctx, e.opts.Ledger, p, ledger.WithCodeIndex())
	if err != nil {
		if e.opts.Ledger.IsShared() {
			return nil, fmt.Errorf("opening the task ledger %s: %w", e.opts.Ledger, err)
		}
		return nil, fmt.Errorf("opening the task ledger %s: %w", p, err)
	}
	e.led = l
	return l, nil
}

// tasks is the task engine (engine/task) over the ledger, with this
// machine's worktrees in the state directory that holds the ledger.
func (e *Engine) tasks(ctx context.Context) (*task.Engine, error) {
	l, err := e.ledger(ctx)
	if err != nil {
		return nil, err
	}
	t := task.New(l)
	if p, err := e.ledgerPath(); err == nil && e.opts.LedgerPath != "" {
		t.StateDir = filepath.Dir(p)
	}
	return t, nil
}

// Close closes the ledger if the engine opened it.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.led == nil {
		return nil
	}
	err := e.led.Close()
	e.led = nil
	return err
}

// reader is the ledger for a read, or nil when there is none yet.
func (e *Engine) reader(ctx context.Context) (ledger.Store, error) {
	if !e.ledgerExists() {
		return nil, nil
	}
	return e.ledger(ctx)
}

// ListTasks is the tasks of the git checkout at repo ("": every task),
// newest first; none (and no ledger created) when there is no ledger yet.
func (e *Engine) ListTasks(ctx context.Context, repo string) ([]engine.Task, error) {
	repo, err := checkoutDir(ctx, repo)
	if err != nil {
		return nil, err
	}
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return []engine.Task{}, err
	}
	return l.Tasks(ctx, repo)
}

// TaskStatuses is every status a task can be in, in lifecycle order.
var TaskStatuses = []engine.TaskStatus{
	engine.TaskQueued, engine.TaskRunning, engine.TaskVerified, engine.TaskBlocked,
	engine.TaskFailed, engine.TaskNotReproducible, engine.TaskCancelled, engine.TaskAccepted, engine.TaskRejected,
}

// ErrUnknownStatus: a task list was filtered by a status no task has; the
// error wrapping it names the valid ones.
var ErrUnknownStatus = errors.New("unknown task status")

// ParseTaskStatuses reads the statuses a task list is filtered by: each
// name one status, or several separated by commas ("verified,blocked").
func ParseTaskStatuses(names []string) ([]engine.TaskStatus, error) {
	var out []engine.TaskStatus
	for _, n := range names {
		for _, s := range strings.Split(n, ",") {
			st := engine.TaskStatus(strings.TrimSpace(s))
			if !slices.Contains(TaskStatuses, st) {
				valid := make([]string, len(TaskStatuses))
				for i, v := range TaskStatuses {
					valid[i] = string(v)
				}
				return nil, fmt.Errorf("%w %q: give one of %s", ErrUnknownStatus, s, strings.Join(valid, ", "))
			}
			if !slices.Contains(out, st) {
				out = append(out, st)
			}
		}
	}
	return out, nil
}

// TaskFilter chooses the tasks of a list.
type TaskFilter struct {
	// Repo is a directory inside a git checkout: only its tasks. "":
	// every task in the ledger.
	Repo string
	// Statuses keeps the tasks in one of them; none: every status.
	Statuses []engine.TaskStatus
}

// FindTasks is the tasks f chooses, the most recently updated first (the
// one created last first among equals); none (and no ledger created) when
// there is no ledger yet.
func (e *Engine) FindTasks(ctx context.Context, f TaskFilter) ([]engine.Task, error) {
	tasks, err := e.ListTasks(ctx, f.Repo)
	if err != nil {
		return nil, err
	}
	out := tasks[:0]
	for _, t := range tasks {
		if len(f.Statuses) == 0 || slices.Contains(f.Statuses, t.Status) {
			out = append(out, t)
		}
	}
	// The ledger lists them newest created first; a stable sort keeps
	// that order among tasks updated at the same instant.
	slices.SortStableFunc(out, func(a, b engine.Task) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

// checkoutDir is the top directory of the git checkout holding dir, the
// repo tasks are recorded under ("": "", every task).
func checkoutDir(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if top, ok := checkouts.lookup(dir); ok {
		return top, nil
	}
	r, err := git.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	checkouts.record(dir, r.Dir)
	return r.Dir, nil
}

// checkouts remembers which checkout each directory is in: bcode-ls asks
// on every code action (whether a task can be resumed), and git.Open
// starts three git processes (6 ms of a 7 ms code action on x/tools).
var checkouts checkoutCache

// checkoutCache maps an absolute directory to its checkout's top. An
// entry holds while the top still has its .git and no directory from dir
// up to (not including) the top has gained one: the checks git itself
// makes to find the top, as a few lstat calls.
type checkoutCache struct {
	mu  sync.Mutex
	top map[string]string
}

func (c *checkoutCache) lookup(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	c.mu.Lock()
	top, ok := c.top[abs]
	c.mu.Unlock()
	if !ok {
		return "", false
	}
	if _, err := os.Lstat(filepath.Join(top, ".git")); err != nil {
		return "", false
	}
	for d := abs; d != top; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", false
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || d == filepath.Dir(d) {
			return "", false
		}
	}
	return top, true
}

func (c *checkoutCache) record(dir, top string) {
	abs, err := filepath.Abs(dir)
	if err != nil || !strings.HasPrefix(abs+string(filepath.Separator), top+string(filepath.Separator)) && abs != top {
		return // a top that is not above dir (a symbolic link): ask git each time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.top == nil {
		c.top = map[string]string{}
	}
	c.top[abs] = top
}

// Task is one task's record.
func (e *Engine) Task(ctx context.Context, id string) (*engine.Task, error) {
	l, err := e.reader(ctx)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, fmt.Errorf("task %q: %w", id, engine.ErrNotFound) // reads never create a ledger
	}
	return l.Task(ctx, id)
}

// Attempts is a task's attempts, oldest first.
func (e *Engine) Attempts(ctx context.Context, id string) ([]engine.Attempt, error) {
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return nil, err
	}
	return l.Attempts(ctx, id)
}

// Events is up to limit events of task id ("" for every task) after
// afterSeq, oldest first.
func (e *Engine) Events(ctx context.Context, id string, afterSeq int64, limit int) ([]engine.Event, error) {
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return nil, err
	}
	return l.Events(ctx, id, afterSeq, limit)
}

// LatestEvents is the newest limit events of task id after afterSeq,
// oldest first, and how many older ones after afterSeq it left out.
func (e *Engine) LatestEvents(ctx context.Context, id string, afterSeq int64, limit int) ([]engine.Event, int, error) {
	if limit <= 0 {
		return nil, 0, fmt.Errorf("app: LatestEvents: limit %d must be positive", limit)
	}
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return nil, 0, err
	}
	return l.LatestEvents(ctx, id, afterSeq, limit)
}

// Verifications is the newest limit check runs of a repository (0: all).
func (e *Engine) Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error) {
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return nil, err
	}
	return l.Verifications(ctx, repo, limit)
}

// TaskVerifications is the newest limit check runs of task id (0: all).
func (e *Engine) TaskVerifications(ctx context.Context, id string, limit int) ([]engine.VerificationRun, error) {
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return nil, err
	}
	return l.TaskVerifications(ctx, id, limit)
}

// TaskOracle is task id's reproduction (--reproduce), nil without one.
func (e *Engine) TaskOracle(ctx context.Context, id string) (*engine.Oracle, error) {
	l, err := e.reader(ctx)
	if l == nil || err != nil {
		return nil, err
	}
	return l.Oracle(ctx, id)
}

// CreateTask records a new task.
func (e *Engine) CreateTask(ctx context.Context, req TaskRequest) (*engine.Task, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	in := task.CreateInput{Repo: req.Repo, Goal: req.Goal, Base: req.Base, Criteria: req.Criteria, Reproduce: req.Reproduce}
	if sel := req.Selection; sel != nil {
		in.Selection = &engine.Selection{File: sel.File, StartLine: sel.StartLine, EndLine: sel.EndLine}
	}
	return t.Create(ctx, in)
}

// RunOptions are a run's observers.
type RunOptions struct {
	OnEvent  func(engine.Event)
	Progress verify.Progress // the gate's, during each attempt's check
}

// RunTask runs a queued task (or one a dead runner left) until it stops:
// verified, blocked, failed or cancelled.
// A run that cannot start (no model, no Docker, no image, no agent) is
// recorded as a task.start_failed event saying what is missing and how to
// provide it.
func (e *Engine) RunTask(ctx context.Context, id string, o RunOptions) (*RunResult, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	r, err := e.startOrRecord(ctx, t, id, o)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, id)
}

// ResumeTask raises a task's budgets by more and runs it again; the model
// is probed first, so a resume that cannot run changes nothing.
// A resume that cannot start is recorded as RunTask's is.
func (e *Engine) ResumeTask(ctx context.Context, id string, more engine.Budgets, o RunOptions) (*RunResult, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	r, err := e.startOrRecord(ctx, t, id, o)
	if err != nil {
		return nil, err
	}
	if _, err := t.Resume(ctx, id, more); err != nil {
		return nil, err
	}
	return r.Run(ctx, id)
}

// CancelTask stops a task; a running runner stops within one heartbeat.
func (e *Engine) CancelTask(ctx context.Context, id string) error {
	t, err := e.tasks(ctx)
	if err != nil {
		return err
	}
	return t.Cancel(ctx, id, e.by())
}

// AcceptTask lands a task on the user's branch (never pushes); force lands
// one that is not verified, recorded as forced. digest, when not "", is
// the digest of the change the user reviewed (TaskReview): a task whose
// change is another now is refused (engine.ErrStaleDigest) and nothing
// lands. The approval and the acceptance are journalled.
func (e *Engine) AcceptTask(ctx context.Context, id string, force bool, digest string) (*task.Accepted, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	return t.Accept(ctx, id, task.AcceptOptions{Force: force, By: e.by(), Digest: digest})
}

// RejectTask removes a task's worktrees and branch; the record stays.
func (e *Engine) RejectTask(ctx context.Context, id string) (*task.Rejected, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	return t.Reject(ctx, id, e.by())
}

// TaskStatus is one task in detail.
func (e *Engine) TaskStatus(ctx context.Context, id string) (*task.Status, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	return t.Status(ctx, id)
}

// TaskEvents is a task's events after afterSeq; with follow, fn sees each
// as it is recorded until the task settles or ctx ends.
func (e *Engine) TaskEvents(ctx context.Context, id string, afterSeq int64, follow bool, fn func(engine.Event) error) error {
	t, err := e.tasks(ctx)
	if err != nil {
		return err
	}
	if follow {
		return t.Follow(ctx, id, afterSeq, fn)
	}
	evs, err := t.Events(ctx, id, afterSeq)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// TaskDiff is the task branch against its base, as a git diff.
func (e *Engine) TaskDiff(ctx context.Context, id string) ([]byte, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	return t.Diff(ctx, id)
}

// by names who did a lifecycle operation, in the ledger's events.
func (e *Engine) by() string {
	if e.opts.By != "" {
		return e.opts.By
	}
	return "the user"
}

// ErrLedgerOpen: UseLedger after the engine opened its ledger.
var ErrLedgerOpen = errors.New("app: the ledger is already open")

// UseLedger points the engine at the ledger a command's flags chose
// (--state, --ledger) when they are only known once the subcommand has
// parsed them; it must come before the first operation that opens the
// ledger.
func (e *Engine) UseLedger(path string, choice backend.Choice) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.led != nil {
		return ErrLedgerOpen
	}
	e.opts.LedgerPath, e.opts.Ledger = path, choice
	return nil
}

// ApproveModule is the user's yes to a module.approval_needed event: the
// host may fetch that module version (path@version) for task id. It
// returns the approved path@version.
func (e *Engine) ApproveModule(ctx context.Context, id, module string) (string, error) {
	l, err := e.ledger(ctx)
	if err != nil {
		return "", err
	}
	if _, err := l.Task(ctx, id); err != nil {
		return "", err
	}
	mv, err := agentbackend.ApproveModule(ctx, l, id, module)
	if err != nil {
		return "", err
	}
	return mv.Path + "@" + mv.Version, nil
}
