//go:build unix

package ledger

import (
	"errors"
	"syscall"
)

// signalZeroAlive asks the kernel whether pid exists; EPERM still means it does.
func signalZeroAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
