//go:build unix

package host

import (
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the command in a process group of its own so a
// timeout kills everything it started (go test's test binaries, pytest's
// workers), not just the direct child.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
