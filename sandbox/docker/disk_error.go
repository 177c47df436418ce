package docker

import (
	"errors"
	"fmt"
)

// ErrDiskLimit wraps every failure to put a runner's directory on a
// filesystem of its own size.
var ErrDiskLimit = errors.New("docker runner: the disk limit")

// StaleDiskError is a disk a dead runner left that ReleaseStaleDisks could
// not release. Dir is the directory it belongs to ("" when a staging point
// no longer says), so that a runner fails only for its own task's.
type StaleDiskError struct {
	Dir string
	Err error
}

func (e *StaleDiskError) Error() string {
	if e.Dir == "" {
		return fmt.Sprintf("%v: releasing a disk a dead runner left: %v", ErrDiskLimit, e.Err)
	}
	return fmt.Sprintf("%v: releasing the disk a dead runner left on %s: %v", ErrDiskLimit, e.Dir, e.Err)
}

func (e *StaleDiskError) Unwrap() []error { return []error{ErrDiskLimit, e.Err} }
