package host_test

import (
	"runtime"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/sandbox/runnertest"
)

// TestConformance runs the backend conformance suite against the host
// runner: the same behaviours the Docker runner must show.
func TestConformance(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) sandbox.Runner { return host.New() },
		runnertest.Options{Dir: func(t *testing.T) string { return t.TempDir() }, NoCPULimit: runtime.GOOS != "linux"})
}

// TestSandboxConformance: the host Sandbox keeps commands inside the
// directory it was opened on, and its runners pass the Runner suite.
func TestSandboxConformance(t *testing.T) {
	runnertest.RunSandbox(t, host.Sandbox{}, runnertest.SandboxOptions{})
}
