//go:build !unix

package llamaserver

import (
	"os"
	"os/exec"
)

// inOwnProcessGroup does nothing where there are no POSIX process groups
// (Windows): only the server process itself is stopped.
func inOwnProcessGroup(*exec.Cmd) {}

// stopGroup kills the server: Windows has no SIGTERM to ask it politely.
func stopGroup(p *os.Process) { _ = p.Kill() }

// killGroup kills the server.
func killGroup(p *os.Process) { _ = p.Kill() }
