// Package sandbox defines where untrusted work runs: the Runner that executes
// commands (tests, builds, the agent's terminal) and the confined file access
// the host uses to read what that work left behind.
//
// Backends live in sub-packages: sandbox/host runs processes on the host with
// a scrubbed environment, sandbox/docker runs them in a locked-down container.
// Both satisfy the same Runner contract and are checked by one conformance
// suite (sandbox/runnertest).
package sandbox

import (
	"context"
	"errors"
	"io"
	"time"
)

// DefaultOutputLimit caps how much of a command's stdout and stderr is kept,
// each, when Command.OutputLimit is zero. Test output of a runaway loop must
// not exhaust the host's memory.
const DefaultOutputLimit = 16 << 20

// CPULimitSeconds is d as RLIMIT_CPU takes it: whole seconds, rounded up,
// at least one.
func CPULimitSeconds(d time.Duration) uint64 {
	s := uint64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Command is one process to run inside a sandbox.
type Command struct {
	// Dir is the working directory. For the host runner it is a host path;
	// container runners map it to the same path inside the container.
	Dir string
	// Args is argv; Args[0] is looked up on the sandbox's PATH.
	Args []string
	// Env is added on top of the runner's scrubbed base environment
	// ("KEY=value"). Later entries win.
	Env []string
	// Stdin, when set, is copied to the process's standard input.
	Stdin io.Reader
	// Timeout bounds the whole process tree; zero means no limit beyond ctx.
	// It is wall-clock time, which a busy machine stretches: a verdict
	// that must not change with load is decided by CPULimit, and Timeout
	// is then only the backstop for a process that waits forever.
	Timeout time.Duration
	// CPULimit, when set, is the CPU time (user and system, in whole
	// seconds, rounded up) each process of the command may use: the
	// kernel's RLIMIT_CPU, which sends SIGXCPU at the limit and SIGKILL a
	// second later (Result.CPULimited). CPU time is what a process used, not how long
	// it waited for a core, so the limit ends a runaway loop after the
	// same work on an idle machine and on a loaded one. sandbox/host
	// sets it on Linux only; elsewhere Timeout alone bounds the command.
	CPULimit time.Duration
	// OutputLimit is the number of bytes kept of stdout and of stderr; zero
	// means DefaultOutputLimit. What is cut is counted in Result.Truncated.
	OutputLimit int64
	// Stdout and Stderr, when set, also receive the stream as it is written
	// (for progress and logs); Result still holds the capped copies. When
	// they are the same writer, the command's stderr is its stdout, as a
	// shell's 2>&1 makes it (OneStream): one pipe, so what it wrote keeps
	// its order (a panic's trace after the line before it), and
	// Result.Stdout holds both.
	Stdout, Stderr io.Writer
}

// OneStream reports whether the command's stderr goes where its stdout
// goes: Stdout and Stderr are one writer.
func (c Command) OneStream() bool {
	if c.Stdout == nil || c.Stderr == nil {
		return false
	}
	return sameWriter(c.Stdout, c.Stderr)
}

// sameWriter is a == b, false for writers whose type cannot be compared
// (== on those panics).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// Result is what a finished command left behind. A non-zero exit status is a
// Result, not an error: tests fail by exiting non-zero.
type Result struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Truncated bool // some output was cut at OutputLimit
	TimedOut  bool // Command.Timeout expired and the process tree was killed
	// CPULimited: the command's process was killed by the kernel for
	// reaching Command.CPULimit. A container runner tells it from the
	// memory limit but not from a command that exits 137 of its own
	// accord under a CPU limit.
	CPULimited bool
	Duration   time.Duration
}

// Runner executes commands. Implementations must kill the whole process tree
// when ctx is done or the timeout expires, and must never inherit the
// caller's environment wholesale.
type Runner interface {
	// Name identifies the backend in reports ("host", "docker").
	Name() string
	// Run starts cmd and waits for it. The error is non-nil only when the
	// command could not be started or ctx ended it (ErrNotFound when
	// Args[0] does not exist); an exit status is reported in Result.
	Run(ctx context.Context, cmd Command) (Result, error)
}

// ErrNotFound reports that a command's executable does not exist in the
// sandbox. Callers turn it into an environment error naming the tool.
var ErrNotFound = errors.New("executable not found")

// Owner names the task attempt sandboxed work is done for. A backend that
// can outlive its caller (a container outlives a SIGKILLed runner) tags
// what it starts with it, so the next holder of the task can find and
// remove what a dead one left.
type Owner struct {
	Task    string // task id; "" for work outside any task (bcode check)
	Fence   int64  // the lease fence of the runner doing the work
	Attempt int    // attempt number within the task
}

// Sandbox makes runners confined to one host directory: the directory is
// the only place their commands can write, and a command's Dir must lie
// inside it. The agent gets one over its worktree; the gate gets one over
// the scratch directory it exports snapshots into, so an agent's tests are
// verified in the same confinement they were written in.
type Sandbox interface {
	// Name identifies the backend ("host", "docker").
	Name() string
	// Open returns a runner confined to dir, an existing absolute host
	// directory. Close it when done.
	Open(ctx context.Context, dir string, owner Owner) (ScopedRunner, error)
}

// Exposer is a Sandbox that can show host directories to its commands,
// read-only, each at its own path: what a language needs beside the
// snapshot (a project's installed packages) without giving the command a
// way to change it. A sandbox whose commands see the host already (the
// host's) needs no Exposer.
type Exposer interface {
	Sandbox
	// Expose returns the sandbox with dirs (absolute host directories)
	// shown read-only to every runner it opens, and where each appears to
	// the runners' commands (the same order).
	Expose(dirs ...string) (Sandbox, []string)
}

// ScopedRunner is a Runner opened by a Sandbox on one directory. A command
// whose Dir is empty runs in that directory; one whose Dir is outside it
// is refused with ErrOutsideScope.
type ScopedRunner interface {
	Runner
	// Dir is the directory the runner is confined to.
	Dir() string
	// Close releases what Open took (an engine connection, scratch files)
	// after the runner's commands have been cleaned up.
	Close() error
}

// ErrOutsideScope reports a command whose working directory is outside the
// directory its ScopedRunner was opened on.
var ErrOutsideScope = errors.New("working directory outside the sandbox's directory")
