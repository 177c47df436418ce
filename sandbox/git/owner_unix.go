//go:build unix

package git

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid owning fi.
func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
