package gateway

import (
	"errors"
	"fmt"
	"time"
)

// Frontier is the cloud endpoint a session may escalate to. It is off
// unless configured, and even then each escalation must pass Policy and
// carry the user's approval. What it is sent goes through the same
// Redactor as everything else, so keys and host paths are removed.
type Frontier struct {
	Backend       Backend
	Policy        EscalationPolicy
	ContextTokens int
}

// EscalationPolicy says when a task may go to the frontier model.
type EscalationPolicy struct {
	// Enabled is false by default: no escalation at all.
	Enabled bool
	// AfterFailedAttempts allows escalation for repeated failure once this
	// many attempts have failed (0: never for failure; only on request).
	AfterFailedAttempts int
}

// Escalation triggers.
const (
	TriggerRepeatedFailure = "repeated_failure"
	TriggerUserRequest     = "user_request"
)

// Approval is the user's explicit yes to sending one task's packet to the
// frontier endpoint.
type Approval struct {
	TaskID   string    `json:"task_id"`
	Endpoint string    `json:"endpoint"`
	By       string    `json:"by"` // who approved (the editor user, the CLI flag)
	At       time.Time `json:"at"`
}

// EscalationRequest asks to run a session on the frontier endpoint.
type EscalationRequest struct {
	Trigger        string    `json:"trigger"`
	FailedAttempts int       `json:"failed_attempts,omitempty"`
	Approval       *Approval `json:"approval,omitempty"`
}

// ErrEscalationRefused wraps every refusal.
var ErrEscalationRefused = errors.New("frontier escalation refused")

// Allow reports nil when the request may go ahead for taskID.
func (p EscalationPolicy) Allow(r EscalationRequest, taskID string) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrEscalationRefused, fmt.Sprintf(format, args...))
	}
	if !p.Enabled {
		return refuse("escalation is off (set model.frontier_endpoint and enable it in .bcode/config.toml)")
	}
	switch r.Trigger {
	case TriggerUserRequest:
	case TriggerRepeatedFailure:
		if p.AfterFailedAttempts <= 0 {
			return refuse("the policy does not escalate on failure, only on the user's request")
		}
		if r.FailedAttempts < p.AfterFailedAttempts {
			return refuse("%d failed attempts; the policy escalates after %d", r.FailedAttempts, p.AfterFailedAttempts)
		}
	default:
		return refuse("unknown trigger %q (want %s or %s)", r.Trigger, TriggerRepeatedFailure, TriggerUserRequest)
	}
	if r.Approval == nil || r.Approval.By == "" || r.Approval.At.IsZero() {
		return refuse("the user has not approved sending this task to the frontier endpoint")
	}
	if r.Approval.TaskID != taskID {
		return refuse("the approval is for task %q, not %q", r.Approval.TaskID, taskID)
	}
	return nil
}
