//go:build unix

package llamaserver

import (
	"os"
	"os/exec"
	"syscall"
)

// inOwnProcessGroup starts the server as the leader of a new process group,
// so stopping it also stops whatever it forked.
func inOwnProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// stopGroup asks the server's whole process group to exit (SIGTERM).
func stopGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup kills the server's whole process group (SIGKILL).
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
