package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ErrSymlink is returned by confined reads when the named file is itself a
// symbolic link. The host never follows a link the agent or the repository
// under test could have planted, even one that stays inside the tree.
var ErrSymlink = errors.New("refusing to follow a symbolic link")

// Confined reads files below one directory through os.Root, so that no path
// and no symbolic link inside the tree can reach a file outside it.
type Confined struct {
	root *os.Root
	dir  string
}

// OpenConfined opens dir for confined reads. Close it when done.
func OpenConfined(dir string) (*Confined, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &Confined{root: r, dir: dir}, nil
}

// Dir is the host directory the reads are confined to.
func (c *Confined) Dir() string { return c.dir }

// Close releases the directory handle.
func (c *Confined) Close() error { return c.root.Close() }

// clean turns a slash-separated repository path into a root-relative one and
// rejects absolute paths and parent references up front, so the error names
// the real problem rather than os.Root's generic "path escapes".
func clean(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\x00") {
		return "", fmt.Errorf("%q: not a relative path", name)
	}
	p := path.Clean(name)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%q: path leaves the tree", name)
	}
	return p, nil
}

// Lstat describes name without following a final symbolic link.
func (c *Confined) Lstat(name string) (fs.FileInfo, error) {
	p, err := clean(name)
	if err != nil {
		return nil, err
	}
	return c.root.Lstat(p)
}

// ReadFile reads at most limit bytes of name (limit <= 0: no limit). A final
// symbolic link is refused with ErrSymlink; a link in a parent directory that
// points outside the tree is refused by os.Root.
func (c *Confined) ReadFile(name string, limit int64) ([]byte, error) {
	p, err := clean(name)
	if err != nil {
		return nil, err
	}
	fi, err := c.root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrSymlink)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	f, err := c.root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit)
	}
	return io.ReadAll(r)
}

// ReadFile is a one-shot confined read of name below dir.
func ReadFile(dir, name string, limit int64) ([]byte, error) {
	c, err := OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadFile(name, limit)
}
