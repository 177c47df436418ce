package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/codegraph"
)

// inotifyWatches counts this process's inotify watches (Linux: one "inotify
// wd:" line per watch in the fdinfo of each inotify descriptor).
func inotifyWatches(t *testing.T) int {
	t.Helper()
	fds, err := filepath.Glob("/proc/self/fdinfo/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fds {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

// TestWatchSkipsIgnoredDirectories: WatchWorkspace leaves node_modules
// and what .gitignore excludes alone. Control: the same tree watched
// without the skip.
func TestWatchSkipsIgnoredDirectories(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts inotify watches through /proc")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	root := t.TempDir()
	mk := func(rel string) {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i++ {
		mk("node_modules/pkg" + string(rune('a'+i%26)) + "/lib/sub" + string(rune('a'+i/26)))
		mk("web/node_modules/dep" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		mk("dist/out" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	mk("cmd/tool")
	mk("internal/core")
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("/dist/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "dist", "outaa", "x.js"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("git", "init", "-q")
	git.Dir = root
	git.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	watch := func(start func(ctx context.Context) error) int {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		before := inotifyWatches(t)
		done := make(chan error, 1)
		go func() { done <- start(ctx) }()
		// The watcher adds the tree before it waits for events (after git
		// lists what it ignores, which a loaded machine makes slow): the
		// count settles once it has, non-zero (the root at least) and the
		// same for three looks in a row. Its start is waited for, not timed.
		n, same := 0, 0
		for i := 0; i < 1200 && (n == 0 || same < 3); i++ {
			time.Sleep(50 * time.Millisecond)
			next := inotifyWatches(t) - before
			if next == n {
				same++
			} else {
				n, same = next, 0
			}
		}
		cancel()
		<-done
		return n
	}
	plain := watch(func(ctx context.Context) error {
		return codegraph.WatchSkipping(ctx, root, nil, func([]string) {})
	})
	skipped := watch(func(ctx context.Context) error {
		unlisted := func(err error) { t.Errorf("listing the ignored directories: %v", err) }
		return app.WatchWorkspace(ctx, root, unlisted, func([]string) {})
	})
	t.Logf("inotify watches: %d without the skip, %d with it", plain, skipped)
	if plain < 150 {
		t.Fatalf("control: only %d watches without the skip; the tree is not what the test means", plain)
	}
	// root, cmd, cmd/tool, internal, internal/core, web.
	if skipped != 6 {
		t.Errorf("%d watches with the skip, want 6 (node_modules and the ignored dist/ left out)", skipped)
	}
}
