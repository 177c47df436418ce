//go:build !unix

package git

// nonblock: no fifos to fear here.
const nonblock = 0
