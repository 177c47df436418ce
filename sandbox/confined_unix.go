//go:build unix

package sandbox

import (
	"errors"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNoBlock: a fifo opens without waiting for a writer, and no terminal
// becomes the controlling one; nothing changes for a regular file.
const openNoBlock = syscall.O_NONBLOCK | syscall.O_NOCTTY

// openDirOnly: the open fails unless the name is a directory.
const openDirOnly = syscall.O_DIRECTORY

// openLeaf opens p (cleaned, root-relative, not ".") beneath root without
// following a final link: os.Root opens the parent directory (refusing an
// escape on the way), then openat with O_NOFOLLOW decides the last name in
// the kernel, in one step. Comparing inodes after an os.Root open would not
// do: a link swapped in may point at a file that reused the inode number
// the check saw.
func openLeaf(root *os.Root, p string, flag int) (*os.File, error) {
	parent, err := root.OpenFile(path.Dir(p), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	var fd int
	for {
		fd, err = unix.Openat(int(parent.Fd()), path.Base(p), flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, ErrSymlink
	case err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.EACCES):
		// A socket (ENXIO), or O_DIRECTORY|O_NOFOLLOW on a link (ENOTDIR
		// on some systems): say what the name is, as a refusal.
		if fi, lerr := root.Lstat(p); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, ErrSymlink
		} else if lerr == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, &notRegular{fi.Mode()}
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), path.Join(root.Name(), p)), nil
}
