package codegraph

import (
	"io/fs"
	"syscall"
)

// fileStamp is what of info, besides size and modification time, says the
// file was rewritten: its inode and its change time, which no utimes call
// can set back (git's index compares both too).
func fileStamp(info fs.FileInfo) (ino uint64, ctime int64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctimespec.Nano()
}
