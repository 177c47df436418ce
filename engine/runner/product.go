package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// AgentBackend is agent.Backend: the command that runs tasks passes it in
// Options (engine/agentbackend's Backend).
type AgentBackend = agent.Backend

// ErrNoAgentBackend: the model answers but this build has no agent.
var ErrNoAgentBackend = errors.New("this build of bcode has no agent backend: the agent (bcode-agent in the sandbox) is not wired in yet, so tasks cannot run; create, status, accept and reject still work")

// Options are what the product's callers (the CLI, the LSP server) choose.
type Options struct {
	// Agent builds each task's agent; nil: tasks cannot run
	// (ErrNoAgentBackend).
	Agent    AgentBackend
	OnEvent  func(engine.Event)
	Progress verify.Progress // the gate's progress during each attempt's check
	// Checks is where the gate's builds and tests run; nil: the agent's
	// own sandbox when it has one (SandboxedAgent), else the host.
	Checks sandbox.Sandbox
	// Scanner gives the process's one secret scanner (engine/app's
	// Redactor), which redacts the packs and runs the checks' secret scan.
	// Required: ForTask calls it beside its other work and fails with its
	// error, or ErrNoScanner when it is nil.
	Scanner func() (*secrets.Scanner, error)
}

// ErrNoScanner: ForTask was given no Options.Scanner. Packs and checks
// need the secret scanner, so there is no run without it.
var ErrNoScanner = errors.New("runner: no secret scanner: pass the process's one (engine/app's Redactor) in Options.Scanner")

// ForTask builds the product runner for a task: it reads the base commit's
// configuration, probes the configured model (failing with how to start
// one), builds the agent with o.Agent, and checks each
// attempt with the gate, recorded in the ledger. Nothing is written.
func ForTask(ctx context.Context, e *task.Engine, id string, o Options) (*Runner, error) {
	// The scanner's rules compile (about a second on a loaded machine)
	// while the ledger, the base config and the model are read: nothing
	// that can run beside the way to the first model request sits on it.
	if o.Scanner == nil {
		return nil, ErrNoScanner
	}
	scannerC := make(chan scannerResult, 1)
	go func() {
		s, err := o.Scanner()
		scannerC <- scannerResult{s, err}
	}()
	t, err := e.Ledger.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	repo, err := git.Open(ctx, t.Repo)
	if err != nil {
		return nil, err
	}
	cfg, err := task.BaseConfig(ctx, repo, t.Base)
	if err != nil {
		return nil, err
	}
	if err := ProbeModel(ctx, cfg.Model.Endpoint); err != nil {
		return nil, err
	}
	b := o.Agent
	if b == nil {
		return nil, fmt.Errorf("the model at %s answers, but %w", cfg.Model.Endpoint, ErrNoAgentBackend)
	}
	agent, err := b(ctx, cfg, *t)
	if err != nil {
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	built := <-scannerC
	if built.err != nil {
		return nil, built.err
	}
	scanner := built.s
	packs := NewPackBuilder(ctx, cfg.Model.Endpoint, ProbeTimeout, scanner, e.Ledger)
	checks := o.Checks
	if checks == nil {
		if sa, ok := agent.(SandboxedAgent); ok {
			checks = sa.CheckSandbox(*t)
		}
	}
	if checks == nil {
		checks = host.Sandbox{}
	}
	return &Runner{
		Engine:  e,
		Agent:   agent,
		Checker: GateChecker{Sandbox: checks, Recorder: e.Ledger, Progress: o.Progress, Config: &cfg, Scanner: scanner},
		Context: packs,
		OnEvent: o.OnEvent,
		// A signal's clean stop must end within the 5 s a user (or a
		// service manager) waits; what it cannot commit in time the next
		// holder's recovery commits.
		CleanupTimeout: ProductCleanupTimeout,
		// Sessions hold a slot of the endpoint's limit, if one is recorded
		// in the ledger (bcode runner --sessions).
		Endpoint: cfg.Model.Endpoint,
		Config:   &cfg, // read once for the run: the worktree's caps and the gate's rules
	}, nil
}

// scannerResult is a secret scanner built beside ForTask's other work.
type scannerResult struct {
	s   *secrets.Scanner
	err error
}

// ProductCleanupTimeout bounds the clean stop of a product run after a
// signal or a cancel (Runner.CleanupTimeout).
const ProductCleanupTimeout = 3 * time.Second

// RunTask runs a queued task (or one a dead runner left) the product way.
func RunTask(ctx context.Context, e *task.Engine, id string, o Options) (*Result, error) {
	r, err := ForTask(ctx, e, id, o)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, id)
}

// ResumeTask raises the task's budgets by more, makes it runnable again
// (task.Engine.Resume) and runs it. The model is probed first, so a resume
// that cannot run changes nothing.
func ResumeTask(ctx context.Context, e *task.Engine, id string, more engine.Budgets, o Options) (*Result, error) {
	r, err := ForTask(ctx, e, id, o)
	if err != nil {
		return nil, err
	}
	if _, err := e.Resume(ctx, id, more); err != nil {
		return nil, err
	}
	return r.Run(ctx, id)
}

// Available is nil when tasks can run with these options (an agent
// backend is given), else ErrNoAgentBackend. Whether a model answers is
// only known when a run starts (ForTask probes it).
func (o Options) Available() error {
	if o.Agent == nil {
		return ErrNoAgentBackend
	}
	return nil
}
