package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// ErrNoAgentBackend: the model answers but this build has no agent.
var ErrNoAgentBackend = errors.New("this build of bcode has no agent backend: the agent (bcode-agent in the sandbox) is not wired in yet, so tasks cannot run; create, status, accept and reject still work")

// ErrNothingRunnable: RunNext found no task to claim.
var ErrNothingRunnable = ledger.ErrNothingRunnable

// cleanupTimeout bounds the clean stop of a run after a signal or a
// cancel (runner.Runner.CleanupTimeout): it must end within the 5 s a user
// (or a service manager) waits; what it cannot commit in time the next
// holder's recovery commits.
const cleanupTimeout = 3 * time.Second

// CanRun is nil when RunTask and ResumeTask can work in this process (an
// agent backend was given), else ErrNoAgentBackend. Whether a model
// answers is only known when a run starts (runnerFor probes it).
func (e *Engine) CanRun() error {
	if e.opts.Agent == nil {
		return ErrNoAgentBackend
	}
	return nil
}

// runnerFor builds the runner of task id: it reads the base commit's
// configuration, probes the configured model (failing with how to start
// one), builds the agent with the engine's backend, and checks each
// attempt with the gate, recorded in the ledger. Nothing is written.
func (e *Engine) runnerFor(ctx context.Context, t *task.Engine, id string, o RunOptions) (*runner.Runner, error) {
	// The scanner's rules compile (about a second on a loaded machine)
	// while the ledger, the base config and the model are read: nothing
	// that can run beside the way to the first model request sits on it.
	type built struct {
		s   *secrets.Scanner
		err error
	}
	scannerC := make(chan built, 1)
	go func() {
		s, err := e.Redactor()
		scannerC <- built{s, err}
	}()
	tk, err := t.Ledger.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	repo, err := git.Open(ctx, tk.Repo)
	if err != nil {
		return nil, err
	}
	cfg, err := task.BaseConfig(ctx, repo, tk.Base)
	if err != nil {
		return nil, err
	}
	if err := runner.ProbeModel(ctx, cfg.Model.Endpoint); err != nil {
		return nil, err
	}
	if e.opts.Agent == nil {
		return nil, fmt.Errorf("the model at %s answers, but %w", cfg.Model.Endpoint, ErrNoAgentBackend)
	}
	agent, err := e.opts.Agent(ctx, cfg, *tk)
	if err != nil {
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	b := <-scannerC
	if b.err != nil {
		return nil, fmt.Errorf("secret scanner: %w", b.err)
	}
	scanner := b.s
	packs := runner.NewPackBuilder(ctx, cfg.Model.Endpoint, runner.ProbeTimeout, scanner, t.Ledger)
	// The gate runs where the agent ran when the agent has a sandbox.
	var checks sandbox.Sandbox = host.Sandbox{}
	if sa, ok := agent.(runner.SandboxedAgent); ok {
		if s := sa.CheckSandbox(*tk); s != nil {
			checks = s
		}
	}
	return &runner.Runner{
		Engine:         t,
		Agent:          agent,
		Checker:        runner.GateChecker{Sandbox: checks, Recorder: t.Ledger, Progress: o.Progress, Config: &cfg, Scanner: scanner},
		Context:        packs,
		OnEvent:        o.OnEvent,
		CleanupTimeout: cleanupTimeout,
		// Sessions hold a slot of the endpoint's limit, if one is recorded
		// in the ledger (bcode runner --sessions).
		Endpoint: cfg.Model.Endpoint,
		Config:   &cfg, // read once for the run: the worktree's caps and the gate's rules
	}, nil
}

// WorkerOptions are a long-running worker's (bcode runner).
type WorkerOptions struct {
	// Poll is how long an idle worker waits before claiming again; zero:
	// 1 s.
	Poll    time.Duration
	OnEvent func(engine.Event)
	// OnStart, when set, is told who the worker is once it is ready to
	// claim.
	OnStart func(WorkerStart)
	// OnResult, when set, is told how each of ServeWorker's runs ended.
	OnResult func(*RunResult, error)
}

// WorkerStart is what a worker says as it starts claiming.
type WorkerStart struct {
	// Owner is the worker's name in the ledger's leases.
	Owner string
	// Worktrees is where its tasks' worktrees live, on this machine.
	Worktrees string
	// Reaped counts the containers of dead bcode processes it removed.
	Reaped int
}

// SetSessionLimit records in the ledger that at most n agent sessions use
// the model at endpoint at once (0 removes the limit); every runner
// sharing the ledger obeys it.
func (e *Engine) SetSessionLimit(ctx context.Context, endpoint string, n int) error {
	l, err := e.ledger(ctx)
	if err != nil {
		return err
	}
	return l.SetEndpointLimit(ctx, endpoint, n)
}

// startWorker opens the task engine for a worker, removes the containers
// dead bcode processes left, and tells o.OnStart.
func (e *Engine) startWorker(ctx context.Context, o WorkerOptions) (*task.Engine, ledger.Holder, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, ledger.Holder{}, err
	}
	holder := ledger.LocalHolder("")
	n, err := agentbackend.ReapOrphans(ctx, "")
	if err != nil {
		n = 0
	}
	if o.OnStart != nil {
		o.OnStart(WorkerStart{Owner: holder.Owner, Worktrees: t.WorktreeRoot(), Reaped: n})
	}
	return t, holder, nil
}

// RunNext claims the oldest runnable task in the ledger (queued, or left
// by a runner that died) and runs it to its end; ErrNothingRunnable when
// there is none.
func (e *Engine) RunNext(ctx context.Context, o WorkerOptions) (*RunResult, error) {
	t, holder, err := e.startWorker(ctx, o)
	if err != nil {
		return nil, err
	}
	lease, rec, err := t.ClaimNext(ctx, holder)
	if err != nil {
		return nil, err
	}
	r, err := e.runnerFor(ctx, t, lease.TaskID, RunOptions{OnEvent: o.OnEvent})
	if err != nil {
		t.Ledger.Release(context.WithoutCancel(ctx), lease)
		return nil, fmt.Errorf("task %s: %w", lease.TaskID, err)
	}
	r.Holder = holder
	return r.RunClaimed(ctx, lease, rec)
}

// ServeWorker claims and runs tasks until ctx ends, telling o.OnResult how
// each run ended. Its error is nil when ctx ended, else why it could not
// start.
func (e *Engine) ServeWorker(ctx context.Context, o WorkerOptions) error {
	t, holder, err := e.startWorker(ctx, o)
	if err != nil {
		return err
	}
	w := &runner.Worker{Engine: t, Holder: holder, Poll: o.Poll, OnResult: o.OnResult,
		Build: func(ctx context.Context, tk engine.Task) (*runner.Runner, error) {
			return e.runnerFor(ctx, t, tk.ID, RunOptions{OnEvent: o.OnEvent})
		}}
	w.Serve(ctx)
	return nil
}

// RunResult is how a run ended: the task as it stopped, the fence of its
// lease, its worktree, and what recovery found.
type RunResult = runner.Result

// Errors a run returns that callers tell apart.
var (
	// ErrStopped: a signal stopped the run; the task was left blocked
	// with a task.interrupted event and can be resumed.
	ErrStopped = runner.ErrStopped
	// ErrTaskRunning: a live runner holds the task, and the operation
	// needs it idle.
	ErrTaskRunning = task.ErrRunning
)

// LeaseTTL is how long a task's lease lives without a heartbeat: a runner
// that stopped holding it is known dead within it.
const LeaseTTL = task.DefaultTTL
