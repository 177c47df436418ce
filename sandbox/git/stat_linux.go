package git

import (
	"io/fs"
	"syscall"
)

// indexStat returns the stat fields git records in its index, truncated to
// 32 bits as git stores them: mtime s/ns, ctime s/ns, inode, size.
func indexStat(fi fs.FileInfo) (st [6]uint32, ok bool) {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return st, false
	}
	return [6]uint32{
		uint32(s.Mtim.Sec), uint32(s.Mtim.Nsec),
		uint32(s.Ctim.Sec), uint32(s.Ctim.Nsec),
		uint32(s.Ino), uint32(s.Size),
	}, true
}
