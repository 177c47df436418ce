// Package engine holds bcode's domain: tasks, the attempts that work on them,
// the leases that say which runner owns a task, the events that record what
// happened, verification runs and model calls. Sub-packages implement it:
// engine/ledger stores it in SQLite; later, engine/runner drives attempts,
// engine/gateway carries model calls and engine/pack builds context packs.
//
// The root package imports nothing of bcode's, so every other part can name
// these types without pulling in a backend.
package engine

import (
	"encoding/json"
	"errors"
	"time"
)

// TaskStatus is where a task is in its lifecycle.
type TaskStatus string

const (
	TaskQueued    TaskStatus = "queued"    // created, never run
	TaskRunning   TaskStatus = "running"   // a runner holds its lease
	TaskVerified  TaskStatus = "verified"  // last attempt's verdict was verified
	TaskBlocked   TaskStatus = "blocked"   // a budget is spent or the agent is stuck; see Reason
	TaskCancelled TaskStatus = "cancelled" // the user cancelled it
	TaskAccepted  TaskStatus = "accepted"  // the user landed it on their branch
	TaskRejected  TaskStatus = "rejected"  // the user threw it away (the record stays)
	TaskFailed    TaskStatus = "failed"    // attempts ended without a verified change
	// TaskNotReproducible: the task's --reproduce tests did not fail on
	// the base in every run (see Reason), so no model was called.
	TaskNotReproducible TaskStatus = "not_reproducible"
)

// Selection is a range of lines in one repository file: the code a task was
// created from, the editor's selection, a pack's focus. A task's record
// also holds the text it selected and its hash, to tell later whether the
// code still says it; a location alone (a request, a pack) has neither, and
// its JSON leaves them out.
type Selection struct {
	File      string `json:"file"` // repository-relative, slash-separated
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Text      string `json:"text,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
}

// Budgets bound a task; when one is spent the task is parked as blocked.
type Budgets struct {
	MaxAttempts int           `json:"max_attempts"`
	MaxTurns    int           `json:"max_turns"`
	MaxTokens   int           `json:"max_tokens"`
	WallClock   time.Duration `json:"wall_clock_ns"`
}

// Task is one unit of work the user asked for.
type Task struct {
	ID        string     `json:"id"`
	Repo      string     `json:"repo"` // the user's checkout (absolute path)
	Goal      string     `json:"goal"`
	Selection *Selection `json:"selection,omitempty"`
	Criteria  []string   `json:"criteria,omitempty"`
	Base      string     `json:"base"`   // base commit id
	Branch    string     `json:"branch"` // bcode/<id>
	Status    TaskStatus `json:"status"`
	Reason    string     `json:"reason,omitempty"`  // why blocked, failed or cancelled
	Verdict   string     `json:"verdict,omitempty"` // last verification verdict
	Budgets   Budgets    `json:"budgets"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// Reproduce, set by whoever creates a reproduce-first task, is what to
	// reproduce: CreateTask stores it in the same transaction as the task,
	// so no runner can claim the task before it (and run it without
	// reproducing first). Read it back with the ledger's Oracle.
	Reproduce *Oracle `json:"-"`
}

// AttemptStatus is where one attempt is.
type AttemptStatus string

const (
	AttemptRunning     AttemptStatus = "running"
	AttemptFinished    AttemptStatus = "finished"
	AttemptInterrupted AttemptStatus = "interrupted" // its runner died or was stopped
)

// AttemptVerdict is how a finished attempt ended: the gate's verdict
// (verify.Verdict's values: verified, green, failed, tampered, error) when
// its check ran, else one of the attempt's own ends below, named so that
// none reads as a gate verdict.
type AttemptVerdict string

const (
	// AttemptAgentFailed: the agent failed in a turn (its session broke);
	// no check ran. Not the gate's "error", which means the check could
	// not decide.
	AttemptAgentFailed AttemptVerdict = "agent_failed"
	// AttemptStuck: the agent said it cannot go on; no check ran.
	AttemptStuck AttemptVerdict = "stuck"
	// AttemptNoChange: the agent finished without changing any file (the
	// task branch's tree is its base's); no check ran, and the next
	// attempt's prompt says so.
	AttemptNoChange AttemptVerdict = "no_change"
)

// Attempt is one try at a task: context, agent turns, verification.
type Attempt struct {
	ID         int64          `json:"id"`
	TaskID     string         `json:"task_id"`
	Number     int            `json:"number"`
	Fence      int64          `json:"fence"` // the lease fence it ran under
	Status     AttemptStatus  `json:"status"`
	Verdict    AttemptVerdict `json:"verdict,omitempty"`
	Note       string         `json:"note,omitempty"` // strategy note for the next attempt
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"`
}

// Lease says which runner owns a task until Expires. Fence increases on
// every acquisition; every write made under a lease names its fence, and a
// write with an older fence is refused.
type Lease struct {
	TaskID    string    `json:"task_id"`
	Owner     string    `json:"owner"` // runner identity: host/pid/nonce
	PID       int       `json:"pid"`
	BootID    string    `json:"boot_id"`
	Fence     int64     `json:"fence"`
	Heartbeat time.Time `json:"heartbeat"`
	Expires   time.Time `json:"expires"`
}

// EventKind names what an event records: the ledger's own EventCreated,
// engine/task's (the lifecycle, attempts, checks), engine/gateway's (the
// agent's actions), engine/agentbackend's (module approvals). A surface
// names them by these constants, never by a literal string.
type EventKind string

// EventCreated is the event the ledger appends when it records a task.
const EventCreated EventKind = "task.created"

// Event kinds engine/task and the runner append: a task's lifecycle, its
// attempts and checks. Their data is JSON described next to where each is
// written.
const (
	EventStarted         EventKind = "task.started"          // a runner holds the lease: owner, pid, fence, worktree
	EventReaped          EventKind = "sandbox.reaped"        // removed: sandboxes (containers) dead runners of the task left
	EventRecovered       EventKind = "task.recovered"        // a takeover: previous owner, last heartbeat, orphaned attempts, phase
	EventAttemptStarted  EventKind = "attempt.started"       // number
	EventContextBuilt    EventKind = "context.built"         // tokens, sections, files
	EventTurn            EventKind = "turn.finished"         // turn, summary, tokens, changed, and its checkpoint commit and parent when it changed files
	EventRecoveryCommit  EventKind = "recovery.commit"       // commit, parent, files: edits a dead runner left uncommitted
	EventAdopted         EventKind = "commit.adopted"        // commit: on the branch, made by a runner that died before recording it
	EventNoChange        EventKind = "attempt.no_change"     // number, head: the agent finished with the branch's tree still the base's; no check ran
	EventStartFailed     EventKind = "task.start_failed"     // missing, reason, fix: a run could not start (no model, no Docker, no image, no agent)
	EventCheckStarted    EventKind = "check.started"         // head
	EventCheckFinished   EventKind = "check.finished"        // head, verdict, reasons
	EventAttemptFinished EventKind = "attempt.finished"      // number, verdict, note
	EventVerified        EventKind = "task.verified"         // head
	EventBlocked         EventKind = "task.blocked"          // reason
	EventFailed          EventKind = "task.failed"           // reason
	EventCancelRequested EventKind = "task.cancel_requested" // by
	EventCancelled       EventKind = "task.cancelled"        // by, phase
	EventInterrupted     EventKind = "task.interrupted"      // signal, phase, commit
	EventResumed         EventKind = "task.resumed"          // budgets
	EventAccepted        EventKind = "task.accepted"         // force, method, branch, from, to, commits
	EventRejected        EventKind = "task.rejected"         // removed worktrees, branch
)

// Event is one thing that happened to a task, in order.
type Event struct {
	Seq     int64           `json:"seq"` // ledger-wide, strictly increasing
	TaskID  string          `json:"task_id"`
	Attempt int64           `json:"attempt,omitempty"`
	Fence   int64           `json:"fence,omitempty"`
	Kind    EventKind       `json:"kind"` // e.g. EventCreated, EventAttemptStarted, EventRecovered
	Data    json.RawMessage `json:"data,omitempty"`
	At      time.Time       `json:"at"`
}

// VerificationRun records one run of the gate (a `bcode check`, or the
// last step of an attempt).
type VerificationRun struct {
	ID         int64           `json:"id"`
	TaskID     string          `json:"task_id,omitempty"`
	Attempt    int64           `json:"attempt,omitempty"`
	Repo       string          `json:"repo"`
	Base       string          `json:"base"`
	Head       string          `json:"head"`
	Verdict    string          `json:"verdict"`
	Report     json.RawMessage `json:"report"` // the full verify.Report as JSON
	DurationMS int64           `json:"duration_ms"`
	At         time.Time       `json:"at"`
}

// ModelCall records one call through the gateway.
type ModelCall struct {
	ID               int64           `json:"id"`
	TaskID           string          `json:"task_id"`
	Attempt          int64           `json:"attempt"`
	Endpoint         string          `json:"endpoint"`
	Model            string          `json:"model"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	DurationMS       int64           `json:"duration_ms"`
	Timings          json.RawMessage `json:"timings,omitempty"` // llama.cpp's timings object
	Error            string          `json:"error,omitempty"`
	At               time.Time       `json:"at"`
}

// Errors a ledger returns that callers act on.
var (
	// ErrNotFound: no such task (or attempt).
	ErrNotFound = errors.New("not found")
	// ErrLeaseHeld: another live runner holds the task's lease.
	ErrLeaseHeld = errors.New("lease held by another runner")
	// ErrFenced: the caller's fence is no longer current; it must stop
	// writing at once, another runner has taken over.
	ErrFenced = errors.New("fenced out: another runner took over this task")
)

// Errors engine/task returns that the surfaces act on.
var (
	// ErrSelectionNotInBase: the selected file is not in the task's base
	// commit (a new file not committed yet), so the agent's worktree, made
	// from the base, would not have the code the user selected.
	ErrSelectionNotInBase = errors.New("the selected file is not in the task's base commit")
	// ErrNotInChange: a task's change was asked for a path the task does
	// not change.
	ErrNotInChange = errors.New("task: path not in the change")
)
