//go:build unix

package git

import "syscall"

// nonblock opens without waiting for a writer, should the file turn out to
// be a fifo; it changes nothing for a regular file.
const nonblock = syscall.O_NONBLOCK
