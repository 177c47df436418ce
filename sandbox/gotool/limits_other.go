//go:build !linux

package gotool

// prlimitPath: there is no prlimit(1) here; the timeout is the only limit.
func prlimitPath() string { return "" }
