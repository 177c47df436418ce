//go:build !linux

package host

import (
	"os/exec"
	"time"
)

// limitCPU: no prlimit here; Command.Timeout alone bounds the command.
func limitCPU(int, time.Duration) error { return nil }

func cpuLimited(*exec.Cmd, time.Duration) bool { return false }
