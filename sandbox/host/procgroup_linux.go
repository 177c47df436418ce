package host

import (
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
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
