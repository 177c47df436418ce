package runnertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// SandboxOptions adapts RunSandbox to a backend.
type SandboxOptions struct {
	// Slack is as in Options.
	Slack time.Duration
}

// RunSandbox is the conformance suite of a sandbox.Sandbox: what Open
// accepts, the confinement of a command's working directory to the opened
// directory, and then the whole Runner suite (Run) through runners the
// sandbox opened.
func RunSandbox(t *testing.T, sb sandbox.Sandbox, opts SandboxOptions) {
	ctx := context.Background()
	open := func(t *testing.T, dir string) sandbox.ScopedRunner {
		t.Helper()
		r, err := sb.Open(ctx, dir, sandbox.Owner{Task: "t-conformance", Fence: 1, Attempt: 1})
		if err != nil {
			t.Fatalf("%s: Open(%s): %v", sb.Name(), dir, err)
		}
		t.Cleanup(func() {
			if err := r.Close(); err != nil {
				t.Errorf("%s: Close: %v", sb.Name(), err)
			}
		})
		return r
	}
	t.Run("OpenRefusesBadDirs", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing")
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{"", "relative/dir", missing, file} {
			if r, err := sb.Open(ctx, dir, sandbox.Owner{}); err == nil {
				r.Close()
				t.Errorf("%s: Open(%q) succeeded, want an error", sb.Name(), dir)
			}
		}
	})
	t.Run("ConfinedToDir", func(t *testing.T) {
		dir := t.TempDir()
		r := open(t, dir)
		if r.Dir() != filepath.Clean(dir) {
			t.Errorf("%s: Dir() = %q, want %q", sb.Name(), r.Dir(), dir)
		}
		// An empty Dir is the opened directory, and what is written there
		// is there for the host.
		res, err := r.Run(ctx, sandbox.Command{Args: sh("pwd -P; echo made > made.txt"), Timeout: time.Minute})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: Run in the opened dir: %+v, %v", sb.Name(), res, err)
		}
		want, _ := filepath.EvalSymlinks(dir)
		if got := string(res.Stdout); got != want+"\n" {
			t.Errorf("%s: an empty Dir ran in %q, want %q", sb.Name(), got, want)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "made.txt")); err != nil || string(b) != "made\n" {
			t.Errorf("%s: the file the command wrote: %q, %v", sb.Name(), b, err)
		}
		// Outside it, including a sibling sharing its name as a prefix,
		// nothing runs.
		outside := t.TempDir()
		sibling := dir + "-sibling"
		if err := os.Mkdir(sibling, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(sibling) })
		for _, d := range []string{outside, sibling, filepath.Join(dir, ".."), "relative"} {
			marker := filepath.Join(outside, "ran")
			_, err := r.Run(ctx, sandbox.Command{Dir: d, Args: sh("touch " + marker), Timeout: time.Minute})
			if !errors.Is(err, sandbox.ErrOutsideScope) {
				t.Errorf("%s: Dir %q outside %s: err = %v, want ErrOutsideScope", sb.Name(), d, dir, err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("%s: the command with Dir %q ran", sb.Name(), d)
			}
		}
	})
	t.Run("Runner", func(t *testing.T) {
		root := t.TempDir()
		Run(t, func(t *testing.T) sandbox.Runner { return open(t, root) },
			Options{Slack: opts.Slack, Dir: func(t *testing.T) string {
				d, err := os.MkdirTemp(root, "case-")
				if err != nil {
					t.Fatal(err)
				}
				return d
			}})
	})
}
