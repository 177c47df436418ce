//go:build unix && !linux

package host

import (
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// setProcessGroup puts the command in a process group of its own so a
// timeout kills everything it started (go test's test binaries, pytest's
// workers), not just the direct child. There is no parent-death signal
// here: if bcode is killed, the group is recorded in its scratch directory
// and the next bcode's sweep kills it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// start starts cmd and records its group; the returned func forgets it.
func start(cmd *exec.Cmd) (func(), error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return scratch.NoteGroup(cmd.Process.Pid), nil
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
