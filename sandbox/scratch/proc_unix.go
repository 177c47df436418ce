//go:build unix && !linux

package scratch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Without /proc there is no boot id and no start time: an owner is judged
// by its pid alone, so a reused pid keeps a dead owner's directory until
// that process ends too (safe, never wrong the other way).
func bootID() string { return "" }

func processStartTime(int) (uint64, bool) { return 0, false }

func processAlive(pid int, _ uint64) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// NoteGroup records a process group bcode started in this process's
// scratch directory, so a sweep after bcode was killed can kill the group;
// forget removes the record once the group is known to be gone.
func NoteGroup(pgid int) (forget func()) {
	d, err := Dir()
	if err != nil {
		return func() {}
	}
	p := filepath.Join(d, "groups", strconv.Itoa(pgid))
	if os.MkdirAll(filepath.Dir(p), 0o700) != nil || os.WriteFile(p, nil, 0o600) != nil {
		return func() {}
	}
	return func() { os.Remove(p) }
}

// killOwned kills the process groups a dead owner recorded with NoteGroup.
func killOwned(dir, _ string) int {
	ents, err := os.ReadDir(filepath.Join(dir, "groups"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if pgid, err := strconv.Atoi(e.Name()); err == nil && pgid > 1 && syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
