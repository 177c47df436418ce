//go:build !unix

package sandbox

// No fifos or terminals to open by accident here.
const (
	openNoBlock = 0
	openDirOnly = 0
)
