package gotool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Identity names the go command a load would run (the go on PATH, as
// Resolve finds it) without starting it: its resolved path, size and
// modification time, and the GOROOT the user set. A Go installed over the
// old one, another go first on PATH or another GOROOT gives another
// identity, so what was derived with one toolchain (the code index's types
// of the standard library) is never taken for another's. "" when there is
// no go on PATH.
func Identity() string {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(goBin); err == nil {
		goBin = abs
	}
	if real, err := filepath.EvalSymlinks(goBin); err == nil {
		goBin = real
	}
	fi, err := os.Stat(goBin)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("go %s %d %d GOROOT=%s", goBin, fi.Size(), fi.ModTime().UnixNano(), os.Getenv("GOROOT"))
}
