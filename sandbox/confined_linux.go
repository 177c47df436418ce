package sandbox

import (
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// beneathDir is the root opened as a path (O_PATH) for openat2.
type beneathDir struct{ fd int }

// openBeneath opens dir for openat2; nil when it cannot be (the reads then
// go through os.Root alone).
func openBeneath(dir string) *beneathDir {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return &beneathDir{fd: fd}
}

func (b *beneathDir) close() {
	if b != nil {
		unix.Close(b.fd)
	}
}

// open opens p, a cleaned root-relative path, as a regular file, deciding
// in three steps the kernel takes on the open descriptor, never on a name:
//
//  1. openat2(O_PATH|O_NOFOLLOW, RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS): the
//     kernel resolves every component beneath the root and opens a final
//     link as itself (an O_PATH open runs no device's open and never blocks
//     on a fifo);
//  2. fstat of that descriptor: anything but a regular file (a link too) is
//     refused;
//  3. the same inode reopened for reading through /proc/self/fd (no name is
//     looked up again, so nothing swapped in after step 1 is reached), or,
//     without /proc, openat2 again for reading with O_NONBLOCK and the
//     inode compared with step 2's.
//
// errNoBeneath: the kernel has no openat2 (or a seccomp filter refuses it);
// the caller falls back to os.Root.
func (b *beneathDir) open(p string) (*os.File, error) {
	if b == nil {
		return nil, errNoBeneath
	}
	pfd, err := openat2(b.fd, p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	switch {
	case err == unix.ENOSYS || err == unix.EPERM:
		return nil, errNoBeneath
	case err == unix.ELOOP:
		return nil, ErrSymlink
	case err != nil:
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK: // O_PATH|O_NOFOLLOW opens the link itself
		return nil, ErrSymlink
	default:
		return nil, &notRegular{modeOf(st.Mode)}
	}
	const readFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), readFlags, 0)
	if err != nil && err != unix.ENOENT {
		return nil, &os.PathError{Op: "open", Path: p, Err: err} // EACCES and the like
	}
	if err != nil {
		// No /proc: resolve once more for reading; fstat must find the
		// inode step 2 judged.
		if fd, err = openat2(b.fd, p, readFlags|unix.O_NOFOLLOW); err != nil {
			if err == unix.ELOOP {
				return nil, ErrSymlink
			}
			return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
		}
		var again unix.Stat_t
		if err := unix.Fstat(fd, &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
			unix.Close(fd)
			return nil, errSwapped
		}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// handle opens p beneath the root as an O_PATH descriptor without
// following a final link.
func (b *beneathDir) handle(p string) (*os.File, error) {
	if b == nil {
		return nil, errNoBeneath
	}
	fd, err := openat2(b.fd, p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	switch {
	case err == unix.ENOSYS || err == unix.EPERM:
		return nil, errNoBeneath
	case err != nil:
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

func openat2(dirfd int, p string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(dirfd, p, &how)
		// EAGAIN: a rename or mount raced the resolution; it is safe to
		// try again (the kernel refused rather than guessed).
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// isEscapeErrno: openat2 refuses a path that leaves the root with EXDEV
// (RESOLVE_BENEATH), and a magic link with ELOOP, which open maps to
// ErrSymlink already.
func isEscapeErrno(err error) bool { return errors.Is(err, syscall.EXDEV) }

func modeOf(m uint32) os.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFIFO:
		return os.ModeNamedPipe
	case unix.S_IFSOCK:
		return os.ModeSocket
	case unix.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		return os.ModeDevice
	case unix.S_IFDIR:
		return os.ModeDir
	case unix.S_IFLNK:
		return os.ModeSymlink
	}
	return os.ModeIrregular
}
