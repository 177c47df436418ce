//go:build linux

package gotool

import "os/exec"

// prlimitPath is util-linux's prlimit(1), which sets a child's resource
// limits before it runs the tool.
func prlimitPath() string {
	for _, p := range []string{"/usr/bin/prlimit", "/bin/prlimit"} {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}
