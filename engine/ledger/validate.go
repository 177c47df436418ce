package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// ErrInvalid is wrapped by every error a Store returns for arguments it
// refuses before touching the database (a nil record, a missing field, a
// record of another task than the lease's, a bad ttl or limit). Both
// backends check them here, once, so they refuse the same calls with the
// same words; ledgertest proves it.
var ErrInvalid = errors.New("ledger: invalid argument")

// invalidError keeps the message a caller reads and says ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// CheckHolder checks the holder and ttl of Acquire and ClaimNext (op).
func CheckHolder(op string, holder Holder, ttl time.Duration) error {
	if err := CheckTTL(op, ttl); err != nil {
		return err
	}
	if holder.Owner == "" {
		return invalid("%s: the holder has no owner", op)
	}
	return nil
}

// CheckTTL checks the ttl of a lease operation (op).
func CheckTTL(op string, ttl time.Duration) error {
	if ttl <= 0 {
		return invalid("%s: ttl %s is not positive", op, ttl)
	}
	return nil
}

// CheckLeasedTask checks that op (StartAttempt, InterruptOrphans) is about
// the leased task.
func CheckLeasedTask(op string, lease engine.Lease, taskID string) error {
	if taskID != lease.TaskID {
		return invalid("%s: task %q is not the leased task %q", op, taskID, lease.TaskID)
	}
	return nil
}

// FinishStatus checks an attempt about to be finished under lease and
// returns the status it is stored with (finished when a.Status is empty or
// running; interrupted is allowed).
func FinishStatus(lease engine.Lease, a *engine.Attempt) (engine.AttemptStatus, error) {
	if a == nil {
		return "", invalid("FinishAttempt: attempt is nil")
	}
	if a.TaskID != lease.TaskID {
		return "", invalid("FinishAttempt: attempt of task %q under the lease of task %q", a.TaskID, lease.TaskID)
	}
	status := a.Status
	if status == "" || status == engine.AttemptRunning {
		status = engine.AttemptFinished
	}
	if status != engine.AttemptFinished && status != engine.AttemptInterrupted {
		return "", invalid("FinishAttempt: unknown attempt status %q", a.Status)
	}
	return status, nil
}

// CheckEvent checks an event about to be appended (under lease, or none).
func CheckEvent(lease *engine.Lease, e *engine.Event) error {
	if e == nil {
		return invalid("Append: event is nil")
	}
	if e.TaskID == "" || e.Kind == "" {
		return invalid("Append: an event needs a task id and a kind (got task %q, kind %q)", e.TaskID, e.Kind)
	}
	if lease != nil && lease.TaskID != e.TaskID {
		return invalid("Append: event of task %q under the lease of task %q", e.TaskID, lease.TaskID)
	}
	return CheckJSON("event data", e.Data)
}

// CheckJSON checks that raw (what, e.g. "event data") is empty or valid
// JSON: both backends store it as JSON.
func CheckJSON(what string, raw json.RawMessage) error {
	if len(raw) > 0 && !json.Valid(raw) {
		return invalid("%s is not valid JSON", what)
	}
	return nil
}

// CheckLatestLimit checks LatestEvents' limit.
func CheckLatestLimit(limit int) error {
	if limit <= 0 {
		return invalid("ledger: LatestEvents needs a positive limit, got %d", limit)
	}
	return nil
}

// CheckVerification checks a gate run about to be recorded.
func CheckVerification(v *engine.VerificationRun) error {
	if v == nil {
		return invalid("RecordVerification: run is nil")
	}
	if v.Repo == "" || v.Verdict == "" {
		return invalid("RecordVerification: a run needs a repo and a verdict (got repo %q, verdict %q)", v.Repo, v.Verdict)
	}
	return CheckJSON("verification report", v.Report)
}

// PrepareModelCall checks a model call about to be recorded under lease,
// filling in the lease's task when c names none.
func PrepareModelCall(lease engine.Lease, c *engine.ModelCall) error {
	if c == nil {
		return invalid("RecordModelCall: call is nil")
	}
	if c.TaskID == "" {
		c.TaskID = lease.TaskID
	}
	if c.TaskID != lease.TaskID {
		return invalid("RecordModelCall: call of task %q under the lease of task %q", c.TaskID, lease.TaskID)
	}
	if c.Model == "" && c.Endpoint == "" {
		return invalid("RecordModelCall: the call names neither an endpoint nor a model")
	}
	return CheckJSON("model call timings", c.Timings)
}

// CheckEndpoint checks the endpoint op (SetEndpointLimit, AcquireSession)
// names.
func CheckEndpoint(op, endpoint string) error {
	if endpoint == "" {
		return invalid("%s: the endpoint is empty", op)
	}
	return nil
}
