package server

import (
	"context"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// startWatching follows the workspace on disk: Go files and go.mod (edits
// made outside the editor, a checkout, a pull), and git's HEAD and index (a
// commit or a staged change moves the base of the change). Each schedules
// an evidence run through the same debounce as a save. It also follows the
// task ledger for bcode/taskChanged.
func (s *Server) startWatching() {
	root, err := s.workspace()
	if err != nil {
		return
	}
	s.goBackground("watching files", func(ctx context.Context) {
		skip := s.watchSkip(ctx, root)
		err := codegraph.WatchSkipping(ctx, root, skip, func(dirs []string) {
			s.log.Debug("files changed on disk", "dirs", dirs)
			if s.settings().EvidenceOnSave {
				s.scheduleEvidence("disk")
			}
		})
		if err != nil {
			s.log.Warn("watching the workspace stopped", "err", err)
		}
	})
	s.goBackground("watching git", func(ctx context.Context) {
		repo, err := git.Open(ctx, root)
		if err != nil {
			s.log.Info("not watching git: the workspace is not a git checkout", "err", err)
			return
		}
		if err := s.watchGit(ctx, repo.GitDir); err != nil {
			s.log.Warn("watching git stopped", "err", err)
		}
	})
	s.goBackground("watching tasks", func(ctx context.Context) {
		s.watchTaskEvents(ctx, time.Second)
	})
}

// watchSkip is what the disk watcher leaves out: node_modules anywhere
// and what the repository ignores, read once when watching starts. A
// JavaScript checkout cost 2,742 inotify watches before.
func (s *Server) watchSkip(ctx context.Context, root string) func(rel string) bool {
	ignored := map[string]bool{}
	if repo, err := git.Open(ctx, root); err == nil {
		dirs, err := repo.IgnoredDirs(ctx)
		if err != nil {
			s.log.Info("watching every directory: git could not list ignored ones", "err", err)
		}
		for _, d := range dirs {
			ignored[strings.TrimSuffix(d, "/")] = true
		}
	}
	return func(rel string) bool {
		return path.Base(rel) == "node_modules" || ignored[rel]
	}
}

// watchGit schedules a run when HEAD or the index of gitDir change.
func (s *Server) watchGit(ctx context.Context, gitDir string) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(gitDir); err != nil {
		return err
	}
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
			// git replaces HEAD and index by renaming their .lock files
			// over them, which shows up as a create of the final name.
			switch filepath.Base(ev.Name) {
			case "HEAD", "index":
				if ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename) != 0 && s.settings().EvidenceOnSave {
					s.scheduleEvidence("git " + filepath.Base(ev.Name))
				}
			}
		}
	}
}
