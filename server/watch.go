package server

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/bcode-dev/bcode/engine/app"
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
		unlisted := func(err error) {
			s.log.Info("watching every directory: git could not list ignored ones", "err", err)
		}
		err := app.WatchWorkspace(ctx, root, unlisted, func(dirs []string) {
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
		gitDir, err := app.GitDir(ctx, root)
		if err != nil {
			s.log.Info("not watching git: the workspace is not a git checkout", "err", err)
			return
		}
		if err := s.watchGit(ctx, gitDir); err != nil {
			s.log.Warn("watching git stopped", "err", err)
		}
	})
	s.goBackground("watching tasks", func(ctx context.Context) {
		s.watchTaskEvents(ctx, time.Second)
	})
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
