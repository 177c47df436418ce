package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// The agent seam lives in engine/agent, under the runner, so the agents
// implement it without importing the runner; these names keep the
// runner's callers and tests reading as before.
type (
	Agent        = agent.Agent
	AttemptInput = agent.AttemptInput
	Session      = agent.Session
	TurnResult   = agent.TurnResult
	// SandboxedAgent is agent.Sandboxed: engine/app checks its attempts in
	// CheckSandbox.
	SandboxedAgent = agent.Sandboxed
	Recoverer      = agent.Recoverer
)

// ContextBuilder builds the context pack an attempt starts with.
type ContextBuilder interface {
	Build(ctx context.Context, t engine.Task, worktree string) (*pack.Pack, error)
}

// PackBuilder builds packs with engine/pack. It is the one way a pack is
// made: an attempt's, `bcode pack`'s and the editor's preview (engine/app),
// so what the editor previews is what the agent gets.
type PackBuilder struct {
	Redactor pack.Redactor // required: no pack leaves without redaction
	Counter  pack.Counter  // nil: the calibrated estimate
	// CounterNote says which counter sized the pack and why (NewCounter's
	// note); it is the pack's first note.
	CounterNote string
	History     pack.TaskHistory
	Budget      int // tokens; 0: pack.DefaultBudget
	// Store keeps the Go index between packs (nil: index afresh); it
	// changes how fast a pack is built, never what it holds.
	Store codegraph.Store
	// IndexProgress hears of each package the Go index indexes (nil:
	// nobody listens).
	IndexProgress func(done, total int, dir string)
}

// NewPackBuilder is the PackBuilder for a repository whose [model]
// endpoint is endpoint: its tokenizer when it shows it is llama-server
// and answers within probe (pack.NewCounter), else the calibrated
// estimate, with the note saying which.
func NewPackBuilder(ctx context.Context, endpoint string, probe time.Duration, redactor pack.Redactor, history pack.TaskHistory) PackBuilder {
	counter, note := pack.NewCounter(ctx, endpoint, probe)
	return PackBuilder{Redactor: redactor, Counter: counter, CounterNote: note, History: history}
}

// Build implements ContextBuilder.
func (b PackBuilder) Build(ctx context.Context, t engine.Task, worktree string) (*pack.Pack, error) {
	in := pack.Input{Repo: worktree, Goal: t.Goal, TaskID: t.ID, Budget: b.Budget,
		Tasks: b.History, Counter: b.Counter, Redactor: b.Redactor, Store: b.Store, IndexProgress: b.IndexProgress}
	if t.Selection != nil {
		in.Selection = t.Selection
	}
	if b.CounterNote != "" {
		in.Notes = append(in.Notes, b.CounterNote)
	}
	for _, c := range t.Criteria {
		in.Notes = append(in.Notes, "acceptance criterion: "+c)
	}
	p, err := pack.Build(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("building the context pack: %w", err)
	}
	return p, nil
}

// Checker judges an attempt's commits against the task's base.
type Checker interface {
	Check(ctx context.Context, in CheckInput) (*verify.Report, error)
}

// CheckInput names what to check.
type CheckInput struct {
	Worktree string
	// Repo is the user's repository and Head the commit to check (the
	// worktree's HEAD): the gate opens Repo, never the worktree, whose
	// .git file the agent could have pointed anywhere.
	Repo    string
	Head    string
	Base    string
	TaskID  string
	Attempt int64 // the attempt's ledger id
	// Number is the attempt's number and Fence the runner's lease fence:
	// with TaskID they tag sandboxed work so a takeover can clean up.
	Number int
	Fence  int64
	// Oracle is the task's pinned oracle, nil without one.
	Oracle *engine.Oracle
}

// GateChecker is the product checker: `bcode check` (engine/check) on the
// worktree's HEAD against the base, recorded in the ledger. The gate's
// builds and tests run in Sandbox when it is set (a runner opened per
// check on a scratch directory), else in Runner.
type GateChecker struct {
	Sandbox  sandbox.Sandbox
	Runner   sandbox.Runner
	Recorder check.Recorder
	Progress verify.Progress
	// Config is the task's base configuration, read once when the run
	// started; nil: each check reads it.
	Config *config.Config
	// Scanner is the run's secret scanner, shared by its packs and checks;
	// required (check.ErrNoScanner).
	Scanner *secrets.Scanner
}

// Check implements Checker.
func (g GateChecker) Check(ctx context.Context, in CheckInput) (*verify.Report, error) {
	repo, head := in.Repo, in.Head
	if repo == "" || head == "" {
		repo, head = in.Worktree, "HEAD"
	}
	o := check.Options{Repo: repo, Base: in.Base, Head: head, Runner: g.Runner,
		Recorder: g.Recorder, Progress: g.Progress, TaskID: in.TaskID, Attempt: in.Attempt,
		Config: g.Config, Scanner: g.Scanner, Oracle: in.Oracle}
	if g.Sandbox != nil {
		o.Runner = nil
		o.Sandbox = g.Sandbox
		o.Owner = sandbox.Owner{Task: in.TaskID, Fence: in.Fence, Attempt: in.Number}
	}
	return check.Run(ctx, o)
}
