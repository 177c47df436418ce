package docker

import (
	"os"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/runnertest"
)

// TestConformance runs the backend conformance suite against the Docker
// runner: every subtest gets its own runner over one shared worktree, and
// works in a directory of its own inside it.
func TestConformance(t *testing.T) {
	requireDocker(t)
	wt := t.TempDir()
	runnertest.Run(t, func(t *testing.T) sandbox.Runner { return newTestRunner(t, wt, nil) },
		runnertest.Options{Dir: func(t *testing.T) string {
			d, err := os.MkdirTemp(wt, "case-")
			if err != nil {
				t.Fatal(err)
			}
			// MkdirTemp's 0700 would set the new directory's ACL mask to
			// nothing; a group-writable mode lets the inherited sandbox
			// entry take effect (see GrantWrite).
			if err := os.Chmod(d, 0o775); err != nil {
				t.Fatal(err)
			}
			return d
		}})
}

// TestSandboxConformance runs the Sandbox suite against the Docker
// sandbox: every Open is a runner of its own over the opened directory.
func TestSandboxConformance(t *testing.T) {
	requireDocker(t)
	runnertest.RunSandbox(t, Sandbox{Template: Config{Image: testImage}}, runnertest.SandboxOptions{})
}
