//go:build !unix

package agentbackend

import (
	"errors"
	"os"
)

// errLocked: another process holds the lock.
var errLocked = errors.New("locked by another process")

// tryLock does not lock where flock is missing: two processes may then
// warm one seed at once, which the go command's cache tolerates.
func tryLock(*os.File) error { return nil }
