package gitchange

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify"
)

// Workspace implements verify.Workspace for a change loaded from git: each
// snapshot is an export of a side's tree into an empty directory under the
// system's temporary directory, never a checkout of the user's.
//
// Without a scratch directory of the caller's, a snapshot is made at a
// stable path (scratch.Hold) when one is free: the same for every gate on
// the repository, per side and slot (the n-th snapshot of a side a gate
// holds at once). go keys a package's build by its directory, so a stable
// path lets go's build cache serve the packages a change did not touch to
// every later gate on the repository, where a fresh path compiles them all
// again. The directory is emptied before the export and removed at Close;
// only what go stored, keyed by content, outlives it. A slot another gate
// holds is never waited for: the snapshot then goes to a fresh directory.
type Workspace struct {
	repo       *git.Repo
	base, head string // commit id of the base; commit or tree id of the head
	scratch    string // where snapshots are made; "" is this process's scratch.Dir()
	stable     string // the repository's stable snapshot key; "" for fresh paths only

	mu     sync.Mutex
	dirs   []string
	held   []*scratch.Held
	closed bool
}

// stableSlots is how many stable snapshots of one side a repository has:
// a gate holds up to two of the base and three of the head at once.
const stableSlots = 4

// stableTree is the snapshot's directory inside its stable slot, so what
// is kept beside a snapshot (its test binaries) is inside the slot too
// and goes with it.
const stableTree = "tree"

var _ verify.Workspace = (*Workspace)(nil)

// Materialize exports side's tree into a new directory (bcode-snap-*, in
// the scratch directory LoadIn was given) and lays overlay over it: each
// file's Head content with its HeadMode (a link for 120000, an empty
// directory for a submodule, 0755 for 100755, else 0644), and a nil Head (other than a submodule's) deletes the path. Paths
// are checked like the tree's own (no absolute path, "..", or ".git"), and
// nothing is written through a symbolic link: a link in the way of an
// overlay file's directory is replaced by a real directory.
func (w *Workspace) Materialize(ctx context.Context, side verify.Side, overlay []verify.FileChange) (string, error) {
	var rev string
	switch side {
	case verify.BaseSide:
		rev = w.base
	case verify.HeadSide:
		rev = w.head
	default:
		return "", fmt.Errorf("materialize: unknown side %q", side)
	}
	for _, fc := range overlay {
		if err := git.CheckPath(fc.Path); err != nil {
			return "", fmt.Errorf("materialize %s: overlay: %w", side, err)
		}
	}
	dir, err := w.emptyDir(side)
	if err != nil {
		return "", fmt.Errorf("materialize %s: %w", side, err)
	}
	if err := w.repo.ExportWithSubmodules(ctx, rev, w.base, dir); err != nil {
		return "", fmt.Errorf("materialize %s: %w", side, err)
	}
	if err := applyOverlay(dir, overlay); err != nil {
		return "", fmt.Errorf("materialize %s: overlay: %w", side, err)
	}
	return dir, nil
}

// emptyDir makes the directory a snapshot of side is exported into: a
// free stable slot of side (see Workspace), else a fresh directory.
func (w *Workspace) emptyDir(side verify.Side) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", errors.New("workspace is closed")
	}
	if w.scratch != "" {
		dir, err := os.MkdirTemp(w.scratch, "bcode-snap-*")
		if err == nil {
			w.dirs = append(w.dirs, dir)
		}
		return dir, err
	}
	for n := 0; w.stable != "" && n < stableSlots; n++ {
		h, err := scratch.Hold(fmt.Sprintf("snap/%s/%s-%d", w.stable, side, n))
		if errors.Is(err, scratch.ErrHeld) {
			continue
		}
		if err != nil {
			break // a fresh directory does as well
		}
		dir := filepath.Join(h.Dir, stableTree)
		if err := os.Mkdir(dir, 0o700); err != nil {
			h.Release()
			break
		}
		w.held = append(w.held, h)
		return dir, nil
	}
	dir, err := scratch.MkdirTemp("bcode-snap-*")
	if err == nil {
		w.dirs = append(w.dirs, dir)
	}
	return dir, err
}

// ReadBase returns path's content at the base commit, or an error wrapping
// fs.ErrNotExist when the base has no such file.
func (w *Workspace) ReadBase(ctx context.Context, p string) ([]byte, error) {
	return w.repo.ShowFile(ctx, w.base, p)
}

// Close removes every directory Materialize made and lets go of its
// stable slots. It can be called more than once; Materialize fails after
// it.
func (w *Workspace) Close() error {
	w.mu.Lock()
	dirs, held := w.dirs, w.held
	w.dirs, w.held, w.closed = nil, nil, true
	w.mu.Unlock()
	var errs []error
	for _, d := range dirs {
		if err := removeAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range held {
		// Removed here, where read-only directories a test left are
		// opened beneath the slot only; then Release lets go of it.
		if err := removeAll(h.Dir); err != nil {
			errs = append(errs, err)
		}
		if err := h.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeAll removes dir even where a test left read-only directories
// behind (the Go module cache, for one, is written read-only).
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	// Walked and changed beneath dir only: a directory swapped for a link
	// by a test still running must not take the chmod out of the tree.
	if conf, err := sandbox.OpenConfined(dir); err == nil {
		if root, err := os.OpenRoot(dir); err == nil {
			_ = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = root.Chmod(p, 0o700)
				}
				return nil
			})
			root.Close()
		}
		conf.Close()
	}
	return os.RemoveAll(dir)
}

// applyOverlay writes overlay into dir, confined to it by os.Root.
func applyOverlay(dir string, overlay []verify.FileChange) error {
	if len(overlay) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, fc := range overlay {
		if fc.Head == nil && fc.HeadMode != modeSubmodule {
			if err := removePath(root, fc.Path); err != nil {
				return err
			}
			continue
		}
		if err := realDirs(root, path.Dir(fc.Path)); err != nil {
			return err
		}
		if err := root.RemoveAll(fc.Path); err != nil {
			return fmt.Errorf("%s: %w", fc.Path, err)
		}
		switch fc.HeadMode {
		case modeSymlink:
			if err := root.Symlink(string(fc.Head), fc.Path); err != nil {
				return err
			}
		case modeSubmodule:
			if err := root.Mkdir(fc.Path, 0o755); err != nil {
				return err
			}
		default:
			perm := fs.FileMode(0o644)
			if fc.HeadMode == "100755" {
				perm = 0o755
			}
			if err := writeFile(root, fc.Path, fc.Head, perm); err != nil {
				return err
			}
		}
	}
	return nil
}

// realDirs makes dir and each of its parents a real directory, replacing
// a link or file in the way, so a write below it cannot be redirected.
func realDirs(root *os.Root, dir string) error {
	if dir == "." {
		return nil
	}
	if err := realDirs(root, path.Dir(dir)); err != nil {
		return err
	}
	fi, err := root.Lstat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		if err := root.Remove(dir); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", dir, err)
	}
	return root.Mkdir(dir, 0o755)
}

// removePath deletes p unless a parent directory is not a real directory,
// in which case p is not in the tree (and a link must not be followed to
// delete something elsewhere).
func removePath(root *os.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		fi, err := root.Lstat(strings.Join(parts[:i], "/"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !fi.IsDir() {
			return nil
		}
	}
	if err := root.RemoveAll(p); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

func writeFile(root *os.Root, p string, content []byte, perm fs.FileMode) error {
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	return f.Close()
}
