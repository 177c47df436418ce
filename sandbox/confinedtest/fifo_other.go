//go:build !unix

package confinedtest

import "errors"

// mkfifo: no fifos here (Run skips the suite).
func mkfifo(string, uint32) error { return errors.ErrUnsupported }
