// Package task is the engine API for a task's lifecycle: create it, read its
// status, events and diff, cancel, resume, accept or reject it, and claim its
// lease with recovery from whatever a dead runner left behind. The CLI, the
// LSP server and the runner (engine/runner) all go through it, so every
// surface changes a task the same way and under the same fencing rules.
//
// Every write to a task is made under its lease: user commands take the
// lease for the moment they need it (and refuse while a live runner holds
// it), so a command and a runner can never both change a task.
package task

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/sandbox"
)

// DefaultTTL is how long a lease lives without a heartbeat. Runners renew
// it every TTL/3, so a runner that stalls for a whole TTL is taken over; a
// runner on this machine that died is taken over at once (see ledger.Acquire).
const DefaultTTL = 30 * time.Second

// Engine is the task API over one ledger.
type Engine struct {
	// Ledger is the task store: the local SQLite file (*ledger.Ledger) or
	// a shared one (engine/ledger/postgres).
	Ledger ledger.Store
	// StateDir holds the worktrees (StateDir/worktrees/<id>-f<fence>); it
	// is the ledger file's directory unless set. A store that is not a
	// local file (Postgres) has no directory: set it.
	StateDir string
	// Holder is who user commands (cancel, resume, accept, reject) take
	// the lease as. Zero: this process (ledger.LocalHolder).
	Holder ledger.Holder
	// TTL is the lease time-to-live; zero means DefaultTTL.
	TTL time.Duration
	// Poll is how often Cancel and Follow look at the ledger; zero: 200ms.
	Poll time.Duration
}

// New returns the engine over l with its defaults; StateDir is l's
// directory when l is a local file.
func New(l ledger.Store) *Engine {
	return &Engine{Ledger: l, StateDir: fileDir(l), Holder: ledger.LocalHolder(""), TTL: DefaultTTL}
}

// fileDir is the directory of a store kept in a local file, else "".
func fileDir(l ledger.Store) string {
	if f, ok := l.(interface{ Path() string }); ok && f.Path() != "" {
		return filepath.Dir(f.Path())
	}
	return ""
}

func (e *Engine) ttl() time.Duration {
	if e.TTL > 0 {
		return e.TTL
	}
	return DefaultTTL
}

func (e *Engine) poll() time.Duration {
	if e.Poll > 0 {
		return e.Poll
	}
	return 200 * time.Millisecond
}

func (e *Engine) stateDir() string {
	if e.StateDir != "" {
		return e.StateDir
	}
	if d := fileDir(e.Ledger); d != "" {
		return d
	}
	// No state dir and no ledger file: worktrees go under the user's
	// state dir, as the SQLite ledger's would.
	d, _ := ledger.StateDir()
	return d
}

func (e *Engine) holder() ledger.Holder {
	if e.Holder.Owner != "" {
		return e.Holder
	}
	return ledger.LocalHolder("")
}

// WorktreeRoot is the directory under the state dir that holds every
// task's worktrees, outside any user checkout.
func (e *Engine) WorktreeRoot() string { return filepath.Join(e.stateDir(), "worktrees") }

// WorktreePath is where the holder of fence works on the task. The fence is
// in the name, so a directory left by an earlier holder is recognisable as
// such and is never mistaken for the current one.
func (e *Engine) WorktreePath(taskID string, fence int64) string {
	return filepath.Join(e.WorktreeRoot(), fmt.Sprintf("%s-f%d", taskID, fence))
}

// worktreeDirs lists the task's worktree directories by fence.
func (e *Engine) worktreeDirs(taskID string) (map[int64]string, error) {
	ents, err := sandbox.ReadDir(e.WorktreeRoot())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[int64]string{}
	prefix := taskID + "-f"
	for _, de := range ents {
		name := de.Name()
		if !de.IsDir() || len(name) <= len(prefix) || name[:len(prefix)] != prefix {
			continue
		}
		var fence int64
		if _, err := fmt.Sscanf(name[len(prefix):], "%d", &fence); err != nil || fmt.Sprint(fence) != name[len(prefix):] {
			continue
		}
		out[fence] = filepath.Join(e.WorktreeRoot(), name)
	}
	return out, nil
}

// The event kinds this package and the runner append are the root
// package's (engine.EventStarted and the rest), where the surfaces name
// them; these are the same constants under this package's names.
const (
	EventStarted         = engine.EventStarted
	EventReaped          = engine.EventReaped
	EventRecovered       = engine.EventRecovered
	EventAttemptStarted  = engine.EventAttemptStarted
	EventContextBuilt    = engine.EventContextBuilt
	EventTurn            = engine.EventTurn
	EventRecoveryCommit  = engine.EventRecoveryCommit
	EventAdopted         = engine.EventAdopted
	EventNoChange        = engine.EventNoChange
	EventStartFailed     = engine.EventStartFailed
	EventCheckStarted    = engine.EventCheckStarted
	EventCheckFinished   = engine.EventCheckFinished
	EventAttemptFinished = engine.EventAttemptFinished
	EventVerified        = engine.EventVerified
	EventBlocked         = engine.EventBlocked
	EventFailed          = engine.EventFailed
	EventCancelRequested = engine.EventCancelRequested
	EventCancelled       = engine.EventCancelled
	EventInterrupted     = engine.EventInterrupted
	EventResumed         = engine.EventResumed
	EventAccepted        = engine.EventAccepted
	EventRejected        = engine.EventRejected
)

// commitKinds are the events that record a commit on the task branch, each
// in a "commit" field: together they account for every commit base..branch.
var commitKinds = map[engine.EventKind]bool{EventTurn: true, EventRecoveryCommit: true, EventAdopted: true}

// Settled reports whether a task's status is one no runner is working
// towards: the user's move next.
func Settled(s engine.TaskStatus) bool {
	switch s {
	case engine.TaskQueued, engine.TaskRunning:
		return false
	}
	return true
}

// Final reports whether the user has closed the task for good.
func Final(s engine.TaskStatus) bool {
	return s == engine.TaskAccepted || s == engine.TaskRejected
}
