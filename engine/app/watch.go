package app

import (
	"context"
	"path"
	"strings"

	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// WatchWorkspace calls changed with the directories of the checkout at
// root (relative to it, slash-separated) whose Go files or go.mod changed
// on disk, batched over a short quiet period, until ctx ends (then the
// error is nil). It leaves out node_modules anywhere and what the
// repository ignores, read once when watching starts: a JavaScript
// checkout cost 2,742 inotify watches before. When git cannot list the
// ignored directories, unlisted is told why and the rest is watched.
func WatchWorkspace(ctx context.Context, root string, unlisted func(error), changed func(dirs []string)) error {
	return codegraph.WatchSkipping(ctx, root, watchSkip(ctx, root, unlisted), changed)
}

// watchSkip is what WatchWorkspace leaves out.
func watchSkip(ctx context.Context, root string, unlisted func(error)) func(rel string) bool {
	ignored := map[string]bool{}
	if repo, err := git.Open(ctx, root); err == nil {
		dirs, err := repo.IgnoredDirs(ctx)
		if err != nil && unlisted != nil {
			unlisted(err)
		}
		for _, d := range dirs {
			ignored[strings.TrimSuffix(d, "/")] = true
		}
	}
	return func(rel string) bool {
		return path.Base(rel) == "node_modules" || ignored[rel]
	}
}

// GitDir is the git directory of the checkout holding dir, where git keeps
// HEAD and the index (a watcher follows them: a commit or a staged change
// moves the base of the change).
func GitDir(ctx context.Context, dir string) (string, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	return repo.GitDir, nil
}
