// Package crashpoint lets a test kill a runner at a named step.
//
// The runner calls Hit("checkpoint.before-event") and the like at the places
// where a crash would leave git and the ledger out of step. Hooks do nothing
// unless the environment variable BCODE_CRASHPOINT names the point, so the
// product path pays one string comparison per hit. When it does name it, the
// process sends itself SIGKILL: no deferred function, no signal handler and
// no buffered write runs, exactly as when the machine loses power or the OOM
// killer strikes.
//
// BCODE_CRASHPOINT=name dies at the first hit; name:N at the Nth hit, so a
// test can reach, say, the third turn's checkpoint.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Env is the variable that arms a crash point.
const Env = "BCODE_CRASHPOINT"

var (
	armedName string
	armedAt   = 1
	mu        sync.Mutex
	hits      int
)

func init() { arm(os.Getenv(Env)) }

// arm parses the variable's value; a malformed count arms the first hit.
func arm(v string) {
	armedName, armedAt, hits = "", 1, 0
	if v == "" {
		return
	}
	name, count, ok := strings.Cut(v, ":")
	armedName = name
	if ok {
		if n, err := strconv.Atoi(count); err == nil && n > 0 {
			armedAt = n
		}
	}
}

// Points are every crash point the runner and the task engine hit, in the
// order a run reaches them. The kill-loop test enumerates them.
var Points = []string{
	"lease.acquired",
	"recover.before-commit",
	"recover.before-event",
	"worktree.before-add",
	"attempt.started",
	"agent.mid-turn",
	"checkpoint.before-ref",
	"checkpoint.before-index",
	"checkpoint.before-event",
	"checkpoint.after-event",
	"check.before-verdict",
	"attempt.before-finish",
	"task.before-release",
}

// Hit kills the process with SIGKILL when name is the armed point and this
// is the armed hit; otherwise it returns at once.
func Hit(name string) {
	if armedName == "" || name != armedName {
		return
	}
	mu.Lock()
	hits++
	n := hits
	mu.Unlock()
	if n != armedAt {
		return
	}
	// os.Process.Kill is SIGKILL on Unix and TerminateProcess on Windows:
	// either way nothing runs a deferred cleanup.
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	// SIGKILL to oneself is delivered before kill returns on Linux; block
	// in case the platform is slower, so nothing after the point runs.
	select {}
}
