//go:build !linux

package scratch

// Mounts is nil where there is no mountinfo: bcode mounts nothing there.
func Mounts() []Mount { return nil }
