// Package agent is the seam between the runner and a coding agent: what an
// attempt gives the agent, what a turn returns, and the backend a command
// injects to build a task's agent. It sits under the runner, so the agents
// (engine/gateway/runneragent, engine/agentbackend) implement it without
// importing the runner that drives them.
package agent

import (
	"context"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/sandbox"
)

// Agent is the coding agent ([sandbox] brings the real one: bcode-agent in
// a container, talking to the model gateway). The runner owns everything
// around it: lease, worktree, checkpoints, check, budgets. An agent only
// edits files in the worktree it is given.
type Agent interface {
	// StartAttempt begins one attempt at the task.
	StartAttempt(ctx context.Context, in AttemptInput) (Session, error)
}

// Backend builds the agent for a task from the base commit's
// configuration, once the model has answered its health probe. The
// command that runs tasks injects it (engine/agentbackend's Backend:
// bcode-agent in a container, talking to the gateway); there is no
// registry.
type Backend func(ctx context.Context, cfg config.Config, t engine.Task) (Agent, error)

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

// Sandboxed is an Agent whose edits are verified in a sandbox of its own
// kind: an agent confined to a container writes code and tests that must
// not then run on the host. The runner checks its attempts in
// CheckSandbox unless the caller says otherwise.
type Sandboxed interface {
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
