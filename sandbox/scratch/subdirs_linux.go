package scratch

import "syscall"

// noSubdirectories reports whether the directory p has no subdirectory,
// by its link count: on Linux's file systems a directory's is 2 (its name
// and its ".") plus one per subdirectory (its ".."). One whose file system
// does not keep that count (btrfs says 1) may have some. The sweep skips
// reading such a directory: a stable directory is a subdirectory, and
// nearly every key's directory holds only the locks of released ones.
func noSubdirectories(p string) bool {
	var st syscall.Stat_t
	return syscall.Lstat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR && st.Nlink == 2
}
