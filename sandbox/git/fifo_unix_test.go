//go:build unix

package git

import (
	"os"
	"path/filepath"
	"syscall"
)

func mkfifo(p string) error {
	os.MkdirAll(filepath.Dir(p), 0o755)
	return syscall.Mkfifo(p, 0o644)
}
