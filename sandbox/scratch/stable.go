package scratch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Stable directories are at a path that is the same for each holder in
// turn, where everything else in scratch is new per process: a tool that
// keys its own cache by a directory's path (go keys a package's build by
// its directory) then finds what it stored for the last holder, while the
// directory itself starts empty every time.
//
// A holder has an exclusive lock (flock) on a file beside the directory,
// which the kernel drops when the holder's last descriptor of it closes,
// so a killed holder holds nothing. Hold never waits: a directory another
// holder has is ErrHeld, and the caller takes a fresh one instead.

// Names in the scratch root. Neither is an owner's, so the owners' sweep
// leaves them alone; sweepStable looks after them.
const (
	stableDirName   = "stable"
	leftoverDirName = "stable-leftovers" // killed holders' directories on their way out
)

// sweepMu serialises this process's sweeps of the stable directories.
var sweepMu sync.Mutex

// ErrHeld: another holder (another process, or another Hold of this one)
// has the stable directory.
var ErrHeld = errors.New("scratch: the directory is held by another holder")

// Held is a stable directory this process holds, empty when Hold returned
// it.
type Held struct {
	Dir  string
	lock *os.File
}

// Hold takes the stable directory key ("/"-separated names of letters,
// digits, '.', '_' and '-', none "." or ".."): $TMPDIR/bcode-<uid>/stable/<key>,
// made empty and 0700. What a holder that was killed left there (a
// directory whose lock is free) is taken out of the way first: processes
// of dead scratch owners are killed (Sweep), and the directory is renamed
// out of the stable path and removed, so nothing of it can appear in the
// new one, not even through a process that kept its working directory
// there. A leftover with a filesystem mounted in it is left alone and the
// key refused.
func Hold(key string) (*Held, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, stableDirName, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	lock, err := openLock(dir + ".lock")
	if err != nil {
		return nil, err
	}
	if err := tryLock(lock); err != nil {
		lock.Close()
		return nil, err
	}
	if err := clearHeld(root, dir); err != nil {
		lock.Close()
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		lock.Close()
		return nil, fmt.Errorf("scratch: %w", err)
	}
	return &Held{Dir: dir, lock: lock}, nil
}

// Release removes the directory and then drops the lock. The lock is
// dropped even when the removal fails: the next holder, or a sweep, clears
// what is left.
func (h *Held) Release() error {
	return errors.Join(removeAll(h.Dir), h.lock.Close())
}

// checkKey refuses a key that is not a relative path of plain names.
func checkKey(key string) error {
	for _, name := range strings.Split(key, "/") {
		if name == "" || name == "." || name == ".." || strings.TrimFunc(name, keyRune) != "" {
			return fmt.Errorf("scratch: stable directory key %q: each name is letters, digits, '.', '_' or '-'", key)
		}
	}
	return nil
}

func keyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// openLock opens (creating) the lock file beside a stable directory; a
// link there is refused, never followed.
func openLock(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("scratch: the lock of a stable directory: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("scratch: %s is not a regular file: remove it", p)
	}
	return f, nil
}

// clearHeld takes a killed holder's directory out of the way of the
// stable directory dir, whose lock this process has just taken: whatever
// still runs for a dead owner is killed first (Sweep).
func clearHeld(root, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := Sweep(); err != nil {
		return err
	}
	return clearLeftover(root, dir, Mounts())
}

// clearLeftover renames dir, a stable directory no one holds, out of its
// path and removes it.
func clearLeftover(root, dir string, mounts []Mount) error {
	real := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	if holdsMount(mounts, real) {
		return fmt.Errorf("scratch: %s holds a mounted filesystem: left alone", dir)
	}
	trash := filepath.Join(root, leftoverDirName)
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return fmt.Errorf("scratch: %w", err)
	}
	aside, err := os.MkdirTemp(trash, "*")
	if err != nil {
		return fmt.Errorf("scratch: %w", err)
	}
	if err := os.Rename(dir, filepath.Join(aside, "dir")); err != nil {
		os.Remove(aside)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // its holder released it meanwhile
		}
		return fmt.Errorf("scratch: moving a leftover stable directory aside: %w", err)
	}
	return removeAll(aside)
}

// sweepStable removes every stable directory below root whose lock is
// free (its holder was killed before Release) and whatever an earlier
// removal left in the leftovers' directory. It returns how many stable
// directories it removed.
func sweepStable(root string, mounts []Mount) (int, error) {
	// One at a time in a process: a command's own sweep runs beside it
	// (cmd/bcode), and a Hold that finds a leftover sweeps too; two at once
	// could each remove the other's directory in the leftovers' directory
	// and leave a leftover in its stable path.
	sweepMu.Lock()
	defer sweepMu.Unlock()
	var locks []string
	err := findStable(filepath.Join(root, stableDirName), &locks)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("scratch: %w", err)
	}
	n := 0
	var errs []error
	for _, l := range locks {
		dir := strings.TrimSuffix(l, ".lock")
		lock, err := openLock(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tryLock(lock) == nil {
			if err := clearLeftover(root, dir, mounts); err != nil {
				errs = append(errs, err)
			} else {
				n++
			}
		}
		lock.Close()
	}
	trash := filepath.Join(root, leftoverDirName)
	ents, _ := os.ReadDir(trash)
	for _, e := range ents {
		if err := removeAll(filepath.Join(trash, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// findStable appends to locks the lock of every stable directory below
// dir: a directory listed beside its NAME.lock. Those are not walked into
// (what a holder's snapshot holds is not the sweep's, even a file named
// like a lock beside a directory); a directory without a lock beside it is
// a level of keys and is, unless it has no subdirectory at all. A lock
// without its directory (one released, as most are) costs nothing more
// than its name in the listing.
func findStable(dir string, locks *[]string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	hasLock := map[string]bool{}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".lock"); ok && e.Type().IsRegular() {
			hasLock[name] = true
		}
	}
	for _, e := range ents {
		switch p := filepath.Join(dir, e.Name()); {
		case !e.IsDir():
		case hasLock[e.Name()]:
			*locks = append(*locks, p+".lock")
		case noSubdirectories(p):
		default:
			if err := findStable(p, locks); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
