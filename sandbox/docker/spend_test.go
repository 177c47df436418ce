//go:build linux

package docker

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker/spendtest"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// TestSpend runs the "what it can spend" attack suite against the Docker
// runner: the worktree on a loop-mounted disk of the suite's size, the
// module view made by gotool.ModuleView from the task's go.sum.
func TestSpend(t *testing.T) {
	e := requireDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("the disk limit needs root (docs/sandbox.md: Boundary: what it can spend)")
	}
	g, err := HostGoEnv(context.Background())
	if err != nil {
		t.Skip("needs go on PATH (https://go.dev/dl):", err)
	}
	spendtest.Run(t, func(ctx context.Context, t *testing.T, s spendtest.Setup) sandbox.ScopedRunner {
		view := filepath.Join(t.TempDir(), "modview")
		tc := &gotool.Toolchain{GOMODCACHE: s.GoModCache}
		if missing, err := tc.ModuleView(view, gotool.ParseSum(s.GoSum)); err != nil || len(missing) > 0 {
			t.Fatalf("module view: missing %v, %v", missing, err)
		}
		r, err := e.NewRunner(ctx, Config{
			Image: testImage, Worktree: s.Dir, Go: g,
			DiskBytes: s.DiskBytes, DiskDiscard: s.Discard, ModCache: view,
			MemoryBytes: 512 << 20, TmpBytes: 128 << 20, HomeBytes: 128 << 20,
			Labels: map[string]string{"dev.bcode.test": "spend"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
}
