//go:build !unix

package scratch

import (
	"errors"
	"os"
)

const noFollow = 0

// tryLock: without flock no directory is held across processes, so none
// is stable; callers take a fresh one.
func tryLock(*os.File) error { return errors.ErrUnsupported }
