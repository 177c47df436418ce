package git

import (
	"io/fs"
	"syscall"
)

// indexStat returns the stat fields git records in its index, truncated to
// 32 bits as git stores them: mtime s/ns, ctime s/ns, inode, size. Darwin
// names the timestamps Mtimespec and Ctimespec.
func indexStat(fi fs.FileInfo) (st [6]uint32, ok bool) {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return st, false
	}
	return [6]uint32{
		uint32(s.Mtimespec.Sec), uint32(s.Mtimespec.Nsec),
		uint32(s.Ctimespec.Sec), uint32(s.Ctimespec.Nsec),
		uint32(s.Ino), uint32(s.Size),
	}, true
}
