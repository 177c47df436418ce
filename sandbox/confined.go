package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The confined reader is bcode's one way to read anything an agent, a
// repository under test or a test run can write: the worktree, the scratch
// directories the gate and evidence work in, and the reports tests leave
// there. It decides the way the kernel does, not by recognising names:
//
//   - the path is resolved by the kernel beneath a root directory (openat2
//     with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS on Linux, os.Root
//     elsewhere), so no link, relative or absolute, in any component leads
//     out of it;
//   - the final component is never followed (O_NOFOLLOW): a link is refused
//     even when its target stays inside the tree;
//   - what was opened is judged by fstat of the open descriptor, never by
//     an earlier stat of the name, so swapping the file between a check and
//     the open changes nothing: only a regular file is read (no device,
//     fifo, socket or directory), and on Linux the name is opened as a
//     path only (O_PATH) until fstat said so, so not even a device's open
//     runs;
//   - every read has a cap and reads at most cap+1 bytes: the size fstat
//     reports is a hint, never trusted (/proc reports 0, a file can grow
//     while it is read).
//
// Refusals are *RefusedError values wrapping ErrEscapes, ErrNotRegular (and
// ErrSymlink) or ErrTooLarge: the tree's doing, which the gate reports as a
// finding, as opposed to a missing file or an I/O error.

var (
	// ErrEscapes: the path, or a link on the way, leads out of the root.
	ErrEscapes = errors.New("path leads out of the directory reads are confined to")
	// ErrNotRegular: the name is not a regular file (a device, fifo,
	// socket, directory or link).
	ErrNotRegular = errors.New("not a regular file")
	// ErrSymlink: the name is a symbolic link. The host never follows a
	// link the agent or the repository under test could have planted, even
	// one that stays inside the tree. It is an ErrNotRegular too.
	ErrSymlink = fmt.Errorf("refusing to follow a symbolic link (%w)", ErrNotRegular)
	// ErrTooLarge: the file holds more than the caller's cap.
	ErrTooLarge = errors.New("file over the size cap")
	// ErrNoCap: a caller asked for a read without a positive cap; a
	// programming error, never the tree's doing.
	ErrNoCap = errors.New("confined read without a size cap: pass the most bytes the caller can use")
)

// RefusedError is a confined read's refusal of what it found under the root:
// a link, a device, fifo, socket or directory, a path out of the root, or a
// file over the cap. Err is ErrEscapes, ErrSymlink, ErrNotRegular or
// ErrTooLarge.
type RefusedError struct {
	Dir    string // the root
	Path   string // slash-separated, relative to Dir
	Err    error
	Detail string // what was found ("a fifo", "at least 4194305 bytes, cap 4194304")
}

func (e *RefusedError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("confined read of %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("confined read of %s: %v: %s", e.Path, e.Err, e.Detail)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Refused reports whether err is a confined read's refusal (the tree's
// doing) and returns it.
func Refused(err error) (*RefusedError, bool) {
	var r *RefusedError
	ok := errors.As(err, &r)
	return r, ok
}

// Confined reads files below one directory. The directory itself is the
// caller's choice and trusted (a link in its own path is followed once,
// when it is opened); everything below it is not.
type Confined struct {
	root *os.Root
	dir  string
	// beneath opens regular files with kernel resolution beneath the root
	// (Linux: openat2); nil where the platform has none, and then root's
	// own resolution is used.
	beneath *beneathDir
}

// OpenConfined opens dir for confined reads. Close it when done.
func OpenConfined(dir string) (*Confined, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	c := &Confined{root: r, dir: dir}
	c.beneath = openBeneath(dir)
	return c, nil
}

// Dir is the host directory the reads are confined to.
func (c *Confined) Dir() string { return c.dir }

// Close releases the directory handle.
func (c *Confined) Close() error {
	c.beneath.close()
	return c.root.Close()
}

// clean turns a slash-separated path into a root-relative one and rejects
// absolute paths and parent references up front, so the error names the
// real problem rather than a generic "path escapes". "." is the root.
func (c *Confined) clean(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\x00") {
		return "", c.refuse(name, ErrEscapes, "not a relative path")
	}
	p := path.Clean(filepath.ToSlash(name))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", c.refuse(name, ErrEscapes, "a parent reference")
	}
	return p, nil
}

func (c *Confined) refuse(name string, err error, detail string) *RefusedError {
	return &RefusedError{Dir: c.dir, Path: name, Err: err, Detail: detail}
}

// Lstat describes name without following a final symbolic link. It reads
// no content; use it to list, never to decide what a later read gets (the
// read decides by its own descriptor).
func (c *Confined) Lstat(name string) (fs.FileInfo, error) {
	p, err := c.clean(name)
	if err != nil {
		return nil, err
	}
	fi, err := c.root.Lstat(p)
	return fi, c.rootErr(name, err)
}

// Open opens name for reading if, and only if, it is a regular file below
// the root, reached without following a link in its last component. The
// caller reads it with its own cap; ReadFile is the usual way.
func (c *Confined) Open(name string) (*os.File, error) {
	p, err := c.clean(name)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, c.refuse(name, ErrNotRegular, "the root directory")
	}
	f, err := c.beneath.open(p)
	if errors.Is(err, errNoBeneath) {
		f, err = c.openRoot(p)
	}
	if err != nil {
		return nil, c.openErr(name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, c.refuse(name, ErrNotRegular, kind(fi.Mode()))
	}
	return f, nil
}

// openRoot is the portable open: os.Root resolves beneath the root and
// openLeaf opens the last name without following a link. O_NONBLOCK keeps a
// fifo swapped in from blocking the open; Open's fstat judges what opened.
func (c *Confined) openRoot(p string) (*os.File, error) {
	return openLeaf(c.root, p, os.O_RDONLY|openNoBlock)
}

// notRegular carries the mode a platform open found before any descriptor
// existed to fstat.
type notRegular struct{ mode fs.FileMode }

func (e *notRegular) Error() string { return kind(e.mode) }

var (
	errSwapped   = errors.New("replaced while it was opened")
	errNoBeneath = errors.New("no kernel resolution beneath a directory here")
)

// openErr turns what an open returned into a refusal where the tree is to
// blame, and keeps the rest (not found, permission) as they are.
func (c *Confined) openErr(name string, err error) error {
	var nr *notRegular
	switch {
	case errors.Is(err, ErrSymlink):
		return c.refuse(name, ErrSymlink, "")
	case errors.As(err, &nr):
		return c.refuse(name, ErrNotRegular, nr.Error())
	case errors.Is(err, errSwapped):
		return c.refuse(name, ErrNotRegular, errSwapped.Error())
	}
	return c.rootErr(name, err)
}

// rootErr maps os.Root's and the kernel's escape errors to ErrEscapes.
func (c *Confined) rootErr(name string, err error) error {
	if err == nil {
		return nil
	}
	if isEscape(err) {
		return c.refuse(name, ErrEscapes, "")
	}
	return err
}

// isEscape: os.Root says "path escapes from parent" (no exported error);
// openat2 says EXDEV (isEscapeErrno).
func isEscape(err error) bool {
	if isEscapeErrno(err) {
		return true
	}
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}

// ReadFile reads name whole, refusing it with ErrTooLarge when it holds more
// than max bytes. max is mandatory. At most max+1 bytes are ever read,
// whatever the file's reported size.
func (c *Confined) ReadFile(name string, max int64) ([]byte, error) {
	if max <= 0 {
		return nil, ErrNoCap
	}
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return c.readCapped(name, f, max)
}

func (c *Confined) readCapped(name string, f *os.File, max int64) ([]byte, error) {
	hint := int64(0)
	if fi, err := f.Stat(); err == nil {
		if fi.Size() > max {
			return nil, c.refuse(name, ErrTooLarge, fmt.Sprintf("%d bytes, cap %d", fi.Size(), max))
		}
		hint = fi.Size()
	}
	// The size is a hint for the buffer only: /proc reports 0, and a file
	// can grow (or be sparse) while it is read.
	buf := make([]byte, 0, min(hint, max)+1)
	for int64(len(buf)) <= max {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), max+1-int64(len(buf)))))
		}
		room := buf[len(buf):min(int64(cap(buf)), max+1)]
		n, err := f.Read(room)
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, c.refuse(name, ErrTooLarge, fmt.Sprintf("more than %d bytes (the cap)", max))
}

// ReadDir lists the directory name (a final link is refused), sorted by
// name like os.ReadDir.
func (c *Confined) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := c.clean(name)
	if err != nil {
		return nil, err
	}
	// O_DIRECTORY: whatever is there now, the open fails at once unless it
	// is a directory (a fifo swapped in cannot block it); openLeaf refuses
	// a final link.
	var d *os.File
	if p == "." {
		d, err = c.root.OpenFile(p, os.O_RDONLY|openDirOnly|openNoBlock, 0)
	} else {
		d, err = openLeaf(c.root, p, os.O_RDONLY|openDirOnly|openNoBlock)
	}
	if errors.Is(err, ErrSymlink) {
		return nil, c.refuse(name, ErrSymlink, "")
	}
	if err != nil {
		return nil, c.rootErr(name, err)
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// WalkDir walks the tree from name (slash-separated, "." for the root) like
// fs.WalkDir: paths given to fn are slash-separated and relative to the
// root, links are not followed, and every directory is listed through
// ReadDir.
func (c *Confined) WalkDir(name string, fn fs.WalkDirFunc) error {
	return fs.WalkDir(walkFS{c}, name, fn)
}

// walkFS is what fs.WalkDir needs of a file system: Stat of the start and
// ReadDir of each directory. It opens no file.
type walkFS struct{ c *Confined }

func (w walkFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
}
func (w walkFS) ReadDir(name string) ([]fs.DirEntry, error) { return w.c.ReadDir(name) }
func (w walkFS) Stat(name string) (fs.FileInfo, error)      { return w.c.Lstat(name) }

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a fifo"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// ReadFile is a one-shot confined read of name below dir, at most max bytes.
func ReadFile(dir, name string, max int64) ([]byte, error) {
	c, err := OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadFile(name, max)
}

// ReadPath reads the file at p, confined to p's directory: for a file a
// test or tool wrote at a path bcode chose (a report, a profile) in a
// directory bcode made. At most max bytes.
func ReadPath(p string, max int64) ([]byte, error) {
	return ReadFile(filepath.Dir(p), filepath.Base(p), max)
}

// ReadDir lists dir itself (the caller's directory, trusted like a root).
func ReadDir(dir string) ([]fs.DirEntry, error) {
	c, err := OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadDir(".")
}

// OpenPath opens the regular file at p, confined to p's directory, for a
// caller that streams it (and caps what it takes).
func OpenPath(p string) (*os.File, error) {
	c, err := OpenConfined(filepath.Dir(p))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Open(filepath.Base(p))
}

// ErrNoHandle: the platform has no kernel resolution beneath a directory
// (openat2), so Handle cannot promise what it names.
var ErrNoHandle = errors.New("no handle beneath a directory on this platform (openat2 is missing)")

// Handle opens name beneath the root as a handle to the object itself
// (Linux: O_PATH): no content is read, no device's open runs, no fifo is
// waited on, and a final link is the link. Calls that take a path (xattrs,
// chmod) reach exactly that object through "/proc/self/fd/N", wherever the
// name leads by then. fstat (Stat) works on it. ErrNoHandle where openat2
// is missing.
func (c *Confined) Handle(name string) (*os.File, error) {
	p, err := c.clean(name)
	if err != nil {
		return nil, err
	}
	f, err := c.beneath.handle(p)
	if errors.Is(err, errNoBeneath) {
		return nil, ErrNoHandle
	}
	return f, c.rootErr(name, err)
}

// Readlink returns the target of the link name, as text: nothing is
// resolved or opened.
func (c *Confined) Readlink(name string) (string, error) {
	p, err := c.clean(name)
	if err != nil {
		return "", err
	}
	t, err := c.root.Readlink(p)
	return t, c.rootErr(name, err)
}

// ListFiles lists the regular files below dir that keep accepts
// (slash-separated, relative, sorted), through the confined reader: links
// are not followed, and directories skip names (by their base name) are
// not entered. An unreadable corner is left out; an unreadable dir is the
// error.
func ListFiles(dir string, skip func(name string) bool, keep func(p string) bool) ([]string, error) {
	conf, err := OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	var out []string
	err = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == ".":
			return err
		case err != nil:
			return nil // an unreadable corner is not the whole tree
		case d.IsDir() && p != "." && skip(d.Name()):
			return fs.SkipDir
		case d.Type().IsRegular() && keep(p):
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
