//go:build unix

package sandbox

import "syscall"

// openNoBlock: a fifo opens without waiting for a writer, and no terminal
// becomes the controlling one; nothing changes for a regular file.
const openNoBlock = syscall.O_NONBLOCK | syscall.O_NOCTTY

// openDirOnly: the open fails unless the name is a directory.
const openDirOnly = syscall.O_DIRECTORY
