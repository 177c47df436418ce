//go:build !unix

package scratch

import (
	"io/fs"
	"os"
)

func bootID() string { return "" }

func processStartTime(int) (uint64, bool) { return 0, false }

// processAlive: where FindProcess cannot open the process, it is gone.
func processAlive(pid int, _ uint64) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

// NoteGroup has nothing to record where there are no process groups.
func NoteGroup(int) (forget func()) { return func() {} }

// killOwned cannot find a dead owner's processes here; its directory is
// still removed (what is open in it may stay until those processes end).
func killOwned(_, _ string) int { return 0 }

func ownedByMe(fs.FileInfo) bool { return true }
