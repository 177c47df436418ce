package host

import (
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bcode-dev/bcode/sandbox"
)

// setProcessGroup puts the command in a process group of its own so a
// timeout or a cancellation kills everything it started (go test's test
// binaries, pytest's workers), not just the direct child; and asks the
// kernel to SIGKILL the child the moment bcode dies, however it dies.
// What the child started itself is not covered by that signal (it is not
// inherited); the next bcode's scratch sweep kills those by the owner id in
// their environment.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// The parent-death signal is sent when the thread that forked the child
// exits, not the process; Go may end a thread (one a goroutine locked and
// left). So every child is forked from one thread that is locked for the
// life of the process and never exits.
var forks = make(chan forkRequest)

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread()
		for r := range forks {
			r.done <- r.cmd.Start()
		}
	}()
}

// start starts cmd from the forking thread. The returned func is for
// symmetry with systems that record the group; there is nothing to forget.
func start(cmd *exec.Cmd) (func(), error) {
	done := make(chan error, 1)
	forks <- forkRequest{cmd, done}
	if err := <-done; err != nil {
		return nil, err
	}
	return func() {}, nil
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// limitCPU sets RLIMIT_CPU on the started process: at d of CPU time the
// kernel sends SIGXCPU (which ends a process that does not handle it; Go
// programs ignore it), and one second later SIGKILL. Set after the start,
// it still bounds the process's whole CPU time (the kernel compares the
// total); a child it forked before is not covered.
func limitCPU(pid int, d time.Duration) error {
	n := sandbox.CPULimitSeconds(d)
	return unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: n, Max: n + 1}, nil)
}

// cpuLimited reports whether the kernel ended cmd for its CPU limit: by
// SIGXCPU, or by the SIGKILL that follows it, once its CPU time is past
// the soft limit (the kill comes a second after it, so the measure's
// rounding cannot hide it).
func cpuLimited(cmd *exec.Cmd, limit time.Duration) bool {
	switch signalOf(cmd) {
	case syscall.SIGXCPU:
		return true
	case syscall.SIGKILL:
		used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return used >= time.Duration(sandbox.CPULimitSeconds(limit))*time.Second
	}
	return false
}
