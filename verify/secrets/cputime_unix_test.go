//go:build unix

package secrets

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far: a benchmark's
// cost that other load on the machine does not inflate, as it does wall
// time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
