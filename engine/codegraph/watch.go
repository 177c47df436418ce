package codegraph

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/fsnotify/fsnotify"
)

// WatchSkipping calls onChange with the repository-relative directories
// whose Go files (or go.mod) changed, batched over a short quiet period,
// until ctx ends. bcode-ls runs Index from onChange to keep its graph
// current; the index itself decides by content hash what really needs
// re-indexing, so a spurious event costs only a hash. New directories are
// watched as they appear. It leaves out the directories skip reports
// (given repository-relative, slash-separated; nil: none): an editor's
// server skips what the repository ignores, so node_modules and build
// output cost no inotify watches. The error is nil when ctx ended.
func WatchSkipping(ctx context.Context, dir string, skip func(rel string) bool, onChange func(dirs []string)) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	// The tree is the agent's: walked beneath abs, links not followed.
	conf, err := sandbox.OpenConfined(abs)
	if err != nil {
		return err
	}
	defer conf.Close()
	addTree := func(root string) {
		rel, ok := relPath(abs, root)
		if !ok {
			return
		}
		_ = conf.WalkDir(filepath.ToSlash(rel), func(slash string, d fs.DirEntry, err error) error {
			p := filepath.Join(abs, filepath.FromSlash(slash))
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != abs && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			if rel, ok := relPath(abs, p); ok && p != abs && skip != nil && skip(filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			_ = w.Add(p)
			return nil
		})
	}
	addTree(abs)
	const quiet = 150 * time.Millisecond
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			return err
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			rel, inside := relPath(abs, ev.Name)
			if !inside {
				continue
			}
			if ev.Op&fsnotify.Create != 0 {
				if fi, err := lstatDir(ev.Name); err == nil && fi {
					addTree(ev.Name)
					continue
				}
			}
			base := filepath.Base(ev.Name)
			if !strings.HasSuffix(base, ".go") && base != "go.mod" {
				continue
			}
			pending[filepath.ToSlash(filepath.Dir(rel))] = true
			timer.Reset(quiet)
		case <-timer.C:
			dirs := make([]string, 0, len(pending))
			for d := range pending {
				dirs = append(dirs, d)
			}
			slices.Sort(dirs)
			clear(pending)
			onChange(dirs)
		}
	}
}

func lstatDir(p string) (bool, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return false, err
	}
	return info.IsDir(), nil
}
