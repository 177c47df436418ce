package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// Store is the ledger as the engine uses it: tasks, leases with fencing,
// attempts, events, verification runs and model calls, and the shared
// limits a team's runners obey. Two backends implement it: *Ledger (this
// package: one embedded SQLite file, the default) and engine/ledger/postgres
// (a database several runners on several machines share). Both pass the one
// conformance suite in engine/ledger/ledgertest.
//
// Every method that takes a lease is fenced: it writes only if the lease row
// still has that owner and fence, in the same transaction as the write, and
// otherwise returns an error wrapping engine.ErrFenced.
type Store interface {
	CreateTask(ctx context.Context, t *engine.Task) error
	Task(ctx context.Context, id string) (*engine.Task, error)
	Tasks(ctx context.Context, repo string) ([]engine.Task, error)
	UpdateTask(ctx context.Context, lease engine.Lease, t *engine.Task) error

	Acquire(ctx context.Context, taskID string, holder Holder, ttl time.Duration) (engine.Lease, *engine.Lease, error)
	// ClaimNext takes the lease of the oldest runnable task: queued, or
	// running with no lease, an expired one, or one whose holder is known
	// dead on this machine. It returns ErrNothingRunnable when there is none
	// (or every runnable one is being claimed by another runner right now).
	ClaimNext(ctx context.Context, holder Holder, ttl time.Duration) (engine.Lease, *engine.Lease, error)
	Heartbeat(ctx context.Context, lease engine.Lease, ttl time.Duration) (engine.Lease, error)
	Release(ctx context.Context, lease engine.Lease) error
	Lease(ctx context.Context, taskID string) (*engine.Lease, error)

	StartAttempt(ctx context.Context, lease engine.Lease, taskID string) (*engine.Attempt, error)
	FinishAttempt(ctx context.Context, lease engine.Lease, a *engine.Attempt) error
	Attempts(ctx context.Context, taskID string) ([]engine.Attempt, error)
	InterruptOrphans(ctx context.Context, lease engine.Lease, taskID string) ([]engine.Attempt, error)

	Append(ctx context.Context, lease *engine.Lease, e *engine.Event) (int64, error)
	Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error)
	LatestEvents(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, int, error)
	// NewestEvents is the newest event of each task of repo ("": every
	// task) that has any, by task id, in one statement: a list of tasks
	// costs the same reads however long it is.
	NewestEvents(ctx context.Context, repo string) (map[string]engine.Event, error)
	// SumEvents counts taskID's events of kind whose data is a JSON object
	// with field an integer (of 64 bits), null or absent, or JSON null, and
	// sums field over them, inside the database: a task's usage without
	// reading its log. These are the events json.Unmarshal decodes into a
	// struct with an int field; it fails on the others, which are left out
	// of both. field is a plain key (letters, digits, underscores).
	SumEvents(ctx context.Context, taskID string, kind engine.EventKind, field string) (n int, sum int64, err error)

	// SetOracle stores a task's reproduction (engine.Oracle), fenced by
	// lease when one is given; a pinned oracle is never replaced
	// (ErrOraclePinned). Oracle reads it back; nil when the task has none.
	SetOracle(ctx context.Context, lease *engine.Lease, taskID string, o *engine.Oracle) error
	Oracle(ctx context.Context, taskID string) (*engine.Oracle, error)

	RecordVerification(ctx context.Context, v *engine.VerificationRun) (int64, error)
	Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error)
	// TaskVerifications is the gate runs recorded for one task, newest
	// first, at most limit (limit <= 0: all).
	TaskVerifications(ctx context.Context, taskID string, limit int) ([]engine.VerificationRun, error)
	RecordModelCall(ctx context.Context, lease engine.Lease, c *engine.ModelCall) (int64, error)
	ModelCalls(ctx context.Context, taskID string) ([]engine.ModelCall, error)

	// SetEndpointLimit records how many model sessions may run at once
	// against endpoint (a llama-server's URL): its share of the GPU. Zero
	// or less removes the limit.
	SetEndpointLimit(ctx context.Context, endpoint string, limit int) error
	// AcquireSession takes one of endpoint's session slots for the lease's
	// holder, fenced by the lease. A slot counts while its lease is current
	// and unexpired, so a runner that died gives its slot back when its
	// lease goes stale, with no sweep. ErrEndpointBusy when every slot is
	// taken; an endpoint with no limit always has room.
	AcquireSession(ctx context.Context, lease engine.Lease, endpoint string) error
	// ReleaseSession gives the lease's slot on endpoint back. Releasing a
	// slot not held is not an error.
	ReleaseSession(ctx context.Context, lease engine.Lease, endpoint string) error
	// EndpointSessions is how many slots of endpoint are held now, and its
	// limit (0: none).
	EndpointSessions(ctx context.Context, endpoint string) (held, limit int, err error)

	// AppendClaims appends claims to the journal (in order, each linked to
	// the one before) and, when ev is not nil, ev to its task's events, in
	// one transaction, fenced by lease when it is not nil: a journal entry
	// exists exactly when what it records does. Appends from every handle
	// and runner are serialised, so the journal stays one chain. Each
	// claim's Payload is made canonical and its Seq, At, PayloadDigest,
	// Prev and Hash are written back (see PrepareClaim, SealClaim).
	AppendClaims(ctx context.Context, lease *engine.Lease, ev *engine.Event, claims ...*engine.Claim) error
	// Claims is the journal's entries with seq > afterSeq, in seq order, at
	// most limit of them (limit <= 0: all).
	Claims(ctx context.Context, afterSeq int64, limit int) ([]engine.Claim, error)

	Close() error
}

// CheckSumField returns an error unless field is a key SumEvents accepts:
// both backends splice it into a JSON path.
func CheckSumField(field string) error {
	if field == "" {
		return invalid("ledger: SumEvents needs a field")
	}
	for _, r := range field {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return invalid("ledger: SumEvents field %q is not a plain key (letters, digits, underscores)", field)
		}
	}
	return nil
}

// Errors the Store's scheduling methods return that callers act on.
var (
	// ErrNothingRunnable: ClaimNext found no task it could take.
	ErrNothingRunnable = errors.New("ledger: no runnable task")
	// ErrEndpointBusy: every session slot of the endpoint is held.
	ErrEndpointBusy = errors.New("ledger: every session slot of the model endpoint is in use")
	// ErrUnavailable: the ledger could not be reached (connection refused,
	// the server restarting, the file locked) for as long as the call was
	// retried. Nothing was written; a runner that gets it stops without
	// writing more, and its lease goes stale for the next holder.
	ErrUnavailable = errors.New("ledger: unreachable")
)

var _ Store = (*Ledger)(nil)

// Runnable reports whether a task in this status may be claimed by a
// runner: queued, or running (its runner died or stalled).
func Runnable(s engine.TaskStatus) bool {
	return s == engine.TaskQueued || s == engine.TaskRunning
}

// TakeOver decides whether acquirer may take a lease cur (held by another
// owner) at now: it has expired, or its holder ran on the acquirer's
// machine since its last boot and is gone (alive says whether a pid lives;
// startTime, when non-zero, must match the live pid's start time). Both
// backends use it, so "stale" means the same thing on either.
func TakeOver(cur HeldLease, acquirer Holder, now time.Time, alive func(int) bool) bool {
	if cur.Owner == acquirer.Owner || !now.Before(cur.Expires) {
		return true
	}
	return holderGone(cur, acquirer, alive)
}

// HeldLease is a lease as stored, with what engine.Lease leaves out: the
// holder's host name and process start time, which only the pid check needs.
type HeldLease struct {
	engine.Lease
	Host      string
	StartTime uint64
}

// holderGone reports whether cur's holder is known dead: it ran on the
// acquirer's machine in this boot and its process no longer exists, or its
// pid now belongs to a process that started at another time. A holder with
// another boot id ran before a reboot or on another machine: its pid says
// nothing here, so only the TTL decides.
func holderGone(cur HeldLease, acquirer Holder, alive func(int) bool) bool {
	// Containers on one machine share its boot id but not its pids: the
	// host name must agree too.
	if cur.BootID == "" || cur.BootID != acquirer.BootID || cur.Host != acquirer.Host || cur.PID <= 0 {
		return false
	}
	if !alive(cur.PID) {
		return true
	}
	if cur.StartTime != 0 {
		if st, ok := processStartTime(cur.PID); ok && st != cur.StartTime {
			return true
		}
	}
	return false
}

// ProcessAlive is the default liveness check both backends use (see
// WithAlive).
func ProcessAlive(pid int) bool { return processAlive(pid) }
