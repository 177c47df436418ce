package gateway

import (
	"context"

	"github.com/bcode-dev/bcode/engine"
)

// Ledger is what the gateway needs of engine/ledger: the event log and the
// model-call records, both fenced by the task's lease.
type Ledger interface {
	Append(ctx context.Context, lease *engine.Lease, e *engine.Event) (int64, error)
	RecordModelCall(ctx context.Context, lease engine.Lease, c *engine.ModelCall) (int64, error)
}

// EventReader reads a task's event log (engine/ledger's Events).
type EventReader interface {
	Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error)
}

// Event kinds the gateway writes.
const (
	// EventAction is one model turn: its text and the tool calls it made.
	EventAction engine.EventKind = "agent.action"
	// EventObservation is the result of one tool call, matched to its
	// action by call id.
	EventObservation engine.EventKind = "agent.observation"
	// EventFinished is the agent's own end of the session.
	EventFinished engine.EventKind = "agent.finished"
	// EventStuck records stuck detection and the strategy note.
	EventStuck engine.EventKind = "agent.stuck"
	// EventEscalated records a frontier escalation and its approval.
	EventEscalated engine.EventKind = "agent.escalated"
)
