package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// Agent is the seam the coding agent plugs into ([sandbox] brings the real
// one: bcode-agent in a container, talking to the model gateway). The
// runner owns everything around it: lease, worktree, checkpoints, check,
// budgets. An agent only edits files in the worktree it is given.
type Agent interface {
	// StartAttempt begins one attempt at the task.
	StartAttempt(ctx context.Context, in AttemptInput) (Session, error)
}

// AttemptInput is what an attempt starts from.
type AttemptInput struct {
	Task     engine.Task
	Attempt  engine.Attempt
	Worktree string     // the directory the agent may edit (the task branch is checked out)
	Pack     *pack.Pack // the context pack; nil when no context builder is configured
	// History are the task's earlier attempts with their verdicts and
	// strategy notes, oldest first.
	History []engine.Attempt
	// Lease is the runner's lease: model calls recorded in the ledger
	// (ledger.RecordModelCall) are fenced by it.
	Lease engine.Lease
	// Ledger is the runner's own ledger, for an agent that records its
	// conversation (one writer connection per process: use this one).
	Ledger ledger.Store
}

// Session is one attempt's conversation with the agent.
type Session interface {
	// Turn runs one agent turn: the agent reads, thinks and edits files in
	// the worktree. It must return soon after ctx ends; the runner then
	// commits whatever the turn changed so far.
	Turn(ctx context.Context) (TurnResult, error)
	Close() error
}

// TurnResult is what one turn did.
type TurnResult struct {
	Summary    string // one line for the event log and the commit subject
	TokensUsed int    // model tokens this turn spent (prompt + completion)
	Done       bool   // the agent thinks the change is complete: check it
	Stuck      bool   // the agent cannot go on: park the task as blocked
	Note       string // the agent's strategy note for a later attempt
}

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
}

// NewPackBuilder is the PackBuilder for a repository whose [model]
// endpoint is endpoint: its tokenizer when it answers within probe, else
// the calibrated estimate, with the note saying which.
func NewPackBuilder(ctx context.Context, endpoint string, probe time.Duration, redactor pack.Redactor, history pack.TaskHistory) PackBuilder {
	counter, note := pack.NewCounter(ctx, endpoint, probe)
	return PackBuilder{Redactor: redactor, Counter: counter, CounterNote: note, History: history}
}

// Build implements ContextBuilder.
func (b PackBuilder) Build(ctx context.Context, t engine.Task, worktree string) (*pack.Pack, error) {
	in := pack.Input{Repo: worktree, Goal: t.Goal, TaskID: t.ID, Budget: b.Budget,
		Tasks: b.History, Counter: b.Counter, Redactor: b.Redactor, Store: b.Store}
	if t.Selection != nil {
		in.Selection = &pack.Selection{File: t.Selection.File, StartLine: t.Selection.StartLine, EndLine: t.Selection.EndLine}
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
}

// Check implements Checker.
func (g GateChecker) Check(ctx context.Context, in CheckInput) (*verify.Report, error) {
	repo, head := in.Repo, in.Head
	if repo == "" || head == "" {
		repo, head = in.Worktree, "HEAD"
	}
	o := check.Options{Repo: repo, Base: in.Base, Head: head, Runner: g.Runner,
		Recorder: g.Recorder, Progress: g.Progress, TaskID: in.TaskID, Attempt: in.Attempt}
	if g.Sandbox != nil {
		o.Runner = nil
		o.Sandbox = g.Sandbox
		o.Owner = sandbox.Owner{Task: in.TaskID, Fence: in.Fence, Attempt: in.Number}
	}
	return check.Run(ctx, o)
}

// SandboxedAgent is an Agent whose edits are verified in a sandbox of its
// own kind: an agent confined to a container writes code and tests that
// must not then run on the host. ForTask checks its attempts in
// CheckSandbox unless Options.Checks says otherwise.
type SandboxedAgent interface {
	Agent
	CheckSandbox(t engine.Task) sandbox.Sandbox
}

// Recoverer is an Agent that can clean up after a dead runner of the same
// task (containers a SIGKILLed runner left running). The runner calls
// Recover once it holds the task's lease, before any attempt or check, so
// nothing of an older fence outlives a takeover, whatever phase the dead
// runner was in. It returns how many leftovers it removed.
type Recoverer interface {
	Recover(ctx context.Context, t engine.Task, lease engine.Lease) (int, error)
}
