// Package scratch is bcode's scratch space. Every temporary directory bcode
// makes (the gate's snapshots, mutant builds, go build's work directories,
// the sandbox's mask files) lives under one root per user,
// $TMPDIR/bcode-<uid>, inside a directory named after the process that owns
// it: <pid>-<start time>-<boot id>, the same three facts a ledger lease
// records. A process that ends normally removes its directory (Release); one
// that was SIGKILLed cannot, so every bcode command, bcode-ls and the task
// runner sweep at start (Sweep): a directory whose owner is dead (pid gone,
// pid reused with another start time, or another boot) is removed, after any
// process that owner started and that is still running has been killed.
//
// Processes are recognised by the variable OwnerEnv in their environment,
// which the host sandbox gives every command it starts and which their own
// children inherit (go test's test binaries, pytest's workers).
package scratch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// OwnerEnv is the environment variable that carries a process's owner id to
// the commands it starts.
const OwnerEnv = "BCODE_SCRATCH_OWNER"

// ErrNotPrivate: the root exists but is not a private directory of this user
// (another user could have planted it, or it is a link).
var ErrNotPrivate = errors.New("scratch: not a private directory of this user")

// Root is the scratch root, $TMPDIR/bcode-<uid>, created 0700. It refuses a
// path that is a link, is not a directory, is writable by others or belongs
// to another user.
func Root() (string, error) {
	name := "bcode-" + strconv.Itoa(os.Getuid())
	if os.Getuid() < 0 { // Windows
		name = "bcode-" + sanitize(os.Getenv("USERNAME"))
	}
	d := filepath.Join(os.TempDir(), name)
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("scratch root %s: %w", d, err)
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", fmt.Errorf("scratch root %s: %w", d, err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByMe(fi) {
		return "", fmt.Errorf("scratch root %s: %w: remove it, or set TMPDIR to another directory", d, ErrNotPrivate)
	}
	return d, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// Owner identifies a process that owns scratch space.
type Owner struct {
	PID       int
	StartTime uint64 // clock ticks after boot; 0 where unknown
	BootID    string // "" where unknown
}

// Self is this process as an owner.
func Self() Owner {
	pid := os.Getpid()
	st, _ := processStartTime(pid)
	return Owner{PID: pid, StartTime: st, BootID: bootID()}
}

// String is the owner's directory name and OwnerEnv value.
func (o Owner) String() string {
	boot := o.BootID
	if boot == "" {
		boot = "noboot"
	}
	return fmt.Sprintf("%d-%d-%s", o.PID, o.StartTime, boot)
}

// parseOwner reads a directory name made by Owner.String.
func parseOwner(name string) (Owner, bool) {
	parts := strings.SplitN(name, "-", 3)
	if len(parts) != 3 {
		return Owner{}, false
	}
	pid, err1 := strconv.Atoi(parts[0])
	st, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 || parts[2] == "" {
		return Owner{}, false
	}
	boot := parts[2]
	if boot == "noboot" {
		boot = ""
	}
	return Owner{PID: pid, StartTime: st, BootID: boot}, true
}

// ParseOwner reads an owner id made by Owner.String: a scratch directory's
// name, an OwnerEnv value, a sandbox container's owner label.
func ParseOwner(s string) (Owner, bool) { return parseOwner(s) }

// Alive reports whether o still runs: false once its pid is gone, reused
// by a process with another start time, or from another boot; true where
// the system cannot tell (leaving something behind is always safe).
func (o Owner) Alive() bool { return alive(o) }

// Own marks cmd, a host command bcode is about to start, as this
// process's: OwnerEnv goes into its environment, which its own children
// inherit, so the sweep after this process was killed finds and kills
// whatever of it still runs. Call it after cmd.Env is set (nil: this
// process's environment).
func Own(cmd *exec.Cmd) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, Env())
}

var (
	mu      sync.Mutex
	ownDirs = map[string]string{} // root -> this process's directory in it
)

// Dir is this process's own scratch directory, created on first use. Its
// subdirectory "tmp" is what the host sandbox gives commands as TMPDIR and
// GOTMPDIR, so go build's work directories and the tests' own temporary
// files are swept with it.
func Dir() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	mu.Lock()
	defer mu.Unlock()
	if d, ok := ownDirs[root]; ok {
		if _, err := os.Stat(d); err == nil {
			return d, nil
		}
	}
	d := filepath.Join(root, Self().String())
	if err := os.MkdirAll(filepath.Join(d, "tmp"), 0o700); err != nil {
		return "", fmt.Errorf("scratch: %w", err)
	}
	ownDirs[root] = d
	return d, nil
}

// TempDir is the directory commands bcode starts get as TMPDIR.
func TempDir() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tmp"), nil
}

// MkdirTemp makes a new directory in this process's scratch directory, as
// os.MkdirTemp does (pattern's last "*" is replaced by a random string).
func MkdirTemp(pattern string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(d, pattern)
}

// Env is OwnerEnv=<this process>, for the environment of a command.
func Env() string {
	handedOut.Store(true)
	return OwnerEnv + "=" + Self().String()
}

// handedOut records that Env was called: only then can a process carrying
// this one's id exist, so only then does Release look for one.
var handedOut atomic.Bool

// Release kills what this process started that still runs (a test binary
// whose go test was killed on a timeout, a server's evidence run cut short
// by an exit without shutdown) and removes this process's scratch
// directory. Commands call it on their way out.
func Release() error {
	root, err := Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, Self().String())
	if handedOut.Load() {
		killOwned(dir, Self().String())
	}
	mu.Lock()
	delete(ownDirs, root)
	mu.Unlock()
	return removeAll(dir)
}

// Swept is what a Sweep did.
type Swept struct {
	Dirs      int // dead owners' directories removed
	Processes int // their processes killed
	Held      int // dead owners' directories left because a filesystem is mounted in them
	Stable    int // stable directories of holders that were killed, removed (see Hold)
}

// Sweep removes the scratch directories of dead owners and kills their
// processes, then removes the stable directories no one holds (what a
// killed holder left). It leaves every live owner's directory and every
// held stable directory alone, and never touches anything outside the
// root.
func Sweep() (Swept, error) {
	root, err := Root()
	if err != nil {
		return Swept{}, err
	}
	return sweep(root, Self(), alive)
}

// SweepOwners is the first half of Sweep: dead owners' directories and
// processes. SweepStable is the second; a command runs it beside its own
// work, since walking every stable directory ever made costs tens of
// milliseconds once there are a thousand of them.
func SweepOwners() (Swept, error) {
	root, err := Root()
	if err != nil {
		return Swept{}, err
	}
	return sweepOwners(root, Self(), alive, Mounts())
}

// SweepStable is the second half of Sweep, run after SweepOwners (the dead
// owners' processes may have been writing in a stable directory): it
// removes the stable directories no one holds and returns how many. It may
// run beside Holds of this process: each directory's lock decides.
func SweepStable() (int, error) {
	root, err := Root()
	if err != nil {
		return 0, err
	}
	return sweepStable(root, Mounts())
}

func sweep(root string, self Owner, isAlive func(Owner) bool) (Swept, error) {
	mounts := Mounts()
	s, err := sweepOwners(root, self, isAlive, mounts)
	// After the dead owners' processes are gone: they may have been
	// writing in a stable directory.
	n, serr := sweepStable(root, mounts)
	s.Stable = n
	return s, errors.Join(err, serr)
}

func sweepOwners(root string, self Owner, isAlive func(Owner) bool, mounts []Mount) (Swept, error) {
	var s Swept
	ents, err := os.ReadDir(root)
	if err != nil {
		return s, fmt.Errorf("scratch: %w", err)
	}
	// The mount table names real paths.
	real := root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		real = r
	}
	var errs []error
	for _, e := range ents {
		o, ok := parseOwner(e.Name())
		if !ok || !e.IsDir() || o == self || isAlive(o) {
			continue
		}
		s.Processes += killOwned(filepath.Join(root, e.Name()), e.Name())
		// A directory with a filesystem mounted in it (a worktree disk, or
		// the staging point of one whose release a kill cut short) is left
		// whole: removing through the mount would delete the only copy of
		// a worktree. sandbox/docker releases the disk, then sweeps again.
		if holdsMount(mounts, filepath.Join(real, e.Name())) {
			s.Held++
			continue
		}
		if err := removeAll(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		s.Dirs++
	}
	return s, errors.Join(errs...)
}

// alive reports whether o still runs. Another boot's owner is dead; on this
// boot, a pid that is gone, a zombie, or a pid reused by a process with
// another start time is dead. Where the system cannot tell, it is alive:
// leaving a directory is always safe.
func alive(o Owner) bool {
	if boot := bootID(); o.BootID != "" && boot != "" && o.BootID != boot {
		return false
	}
	return processAlive(o.PID, o.StartTime)
}

// removeAll is os.RemoveAll that also removes what is read-only: go build
// and module downloads leave directories without write permission.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// OwnerDead reports whether name, a directory name in the scratch root,
// belongs to an owner known to be dead (as Sweep decides). Names that are
// not owners' are not dead: what they hold is left alone.
func OwnerDead(name string) bool {
	o, ok := parseOwner(name)
	return ok && o != Self() && !alive(o)
}
