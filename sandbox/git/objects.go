package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Entry is one path that differs between two trees.
type Entry struct {
	Path    string
	Status  byte // 'A' added, 'M' modified, 'D' deleted, 'T' type changed
	OldMode string
	NewMode string
	OldBlob string // the null id where the path is absent
	NewBlob string
}

// DiffTree lists every path that differs from base to head (commits or
// trees), recursively, without rename detection. Submodules appear as
// entries of mode 160000 whose "blob" is the submodule's commit.
func (r *Repo) DiffTree(ctx context.Context, base, head string) ([]Entry, error) {
	for _, rev := range []string{base, head} {
		if err := checkRev(rev); err != nil {
			return nil, err
		}
	}
	out, err := r.plumbing(ctx, invocation{args: []string{"diff-tree", "-r", "-z", "--raw", "--no-renames", "--ignore-submodules=none", base, head}})
	if err != nil {
		return nil, fmt.Errorf("comparing %s with %s: %w", base, head, err)
	}
	return parseRawDiff(out)
}

// parseRawDiff reads `diff-tree -z --raw`: ":<old mode> <new mode> <old id>
// <new id> <status>\0<path>\0" per entry.
func parseRawDiff(out []byte) ([]Entry, error) {
	var entries []Entry
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		meta := fields[i]
		if meta == "" && i == len(fields)-1 {
			break
		}
		if !strings.HasPrefix(meta, ":") || i+1 >= len(fields) {
			return nil, fmt.Errorf("diff-tree: malformed entry %q", meta)
		}
		f := strings.Fields(meta[1:])
		if len(f) != 5 || len(f[4]) != 1 {
			return nil, fmt.Errorf("diff-tree: malformed entry %q", meta)
		}
		st := f[4][0]
		switch st {
		case 'A', 'M', 'D', 'T':
		default:
			return nil, fmt.Errorf("diff-tree: unexpected status %q for %q", f[4], fields[i+1])
		}
		i++
		e := Entry{Path: fields[i], Status: st, OldMode: f[0], NewMode: f[1], OldBlob: f[2], NewBlob: f[3]}
		if st == 'A' {
			e.OldMode = ""
		}
		if st == 'D' {
			e.NewMode = ""
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// validID accepts a full or abbreviated hexadecimal object id, so nothing
// else can reach cat-file's line-based input.
func validID(id string) bool {
	if len(id) < 4 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// catObjects streams the objects named by ids through one
// `cat-file --batch` process (which applies no filter and no textconv),
// calling fn for each in order with a reader of exactly its content.
func (r *Repo) catObjects(ctx context.Context, ids []string, fn func(id, typ string, size int64, content io.Reader) error) error {
	if len(ids) == 0 {
		return nil
	}
	var in strings.Builder
	for _, id := range ids {
		if !validID(id) {
			return fmt.Errorf("invalid object id %q", id)
		}
		in.WriteString(id)
		in.WriteByte('\n')
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := r.plumbing(ctx, invocation{args: []string{"cat-file", "--batch"}, stdin: strings.NewReader(in.String()), stdout: pw})
		pw.CloseWithError(err)
		done <- err
	}()
	err := readBatch(pr, ids, fn)
	if err != nil {
		cancel()
		pr.CloseWithError(err)
		<-done
		return err
	}
	if werr := <-done; werr != nil {
		return fmt.Errorf("reading objects: %w", werr)
	}
	return nil
}

func readBatch(pr io.Reader, ids []string, fn func(id, typ string, size int64, content io.Reader) error) error {
	br := bufio.NewReaderSize(pr, 64<<10)
	for _, id := range ids {
		header, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading object %s: %w", id, err)
		}
		f := strings.Fields(header)
		if len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous") {
			return fmt.Errorf("object %s is %s from the repository", id, f[1])
		}
		if len(f) != 3 {
			return fmt.Errorf("reading object %s: unexpected header %q", id, header)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("reading object %s: unexpected header %q", id, header)
		}
		body := io.LimitReader(br, size)
		if err := fn(f[0], f[1], size, body); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return fmt.Errorf("reading object %s: %w", id, err)
		}
		if b, err := br.ReadByte(); err != nil || b != '\n' {
			return fmt.Errorf("reading object %s: missing terminator", id)
		}
	}
	return nil
}

// ReadBlobs returns the content of each blob, keyed by the ids given, read
// by one `cat-file --batch` process.
func (r *Repo) ReadBlobs(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(ids))
	var uniq []string
	for _, id := range ids {
		if _, dup := out[id]; !dup {
			out[id] = nil
			uniq = append(uniq, id)
		}
	}
	i := 0
	err := r.catObjects(ctx, uniq, func(_, typ string, size int64, content io.Reader) error {
		id := uniq[i]
		i++
		if typ != "blob" {
			return fmt.Errorf("object %s is a %s, not a file's content", id, typ)
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(content, buf); err != nil {
			return fmt.Errorf("reading object %s: %w", id, err)
		}
		out[id] = buf
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// treeEntry is one line of `ls-tree -z`.
type treeEntry struct {
	mode, typ, id, path string
}

func (r *Repo) lsTree(ctx context.Context, tree string, recursive bool, paths ...string) ([]treeEntry, error) {
	args := []string{"ls-tree", "-z", "--full-tree"}
	if recursive {
		args = append(args, "-r")
	}
	args = append(args, tree, "--")
	args = append(args, paths...)
	out, err := r.plumbing(ctx, invocation{args: args})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", tree, err)
	}
	var entries []treeEntry
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ls-tree: malformed entry %q", rec)
		}
		entries = append(entries, treeEntry{mode: f[0], typ: f[1], id: f[2], path: p})
	}
	return entries, nil
}

// CheckPath accepts a slash-separated path relative to the top of a tree
// that stays inside it: no absolute path, no empty, "." or ".." component,
// and no ".git" component in any letter case (writing one would plant
// configuration or hooks for the next git run in that directory).
func CheckPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q: absolute path", p)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%q: NUL in path", p)
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "" || c == ".":
			return fmt.Errorf("%q: empty or '.' component", p)
		case c == "..":
			return fmt.Errorf("%q: path leaves the tree", p)
		case strings.EqualFold(c, ".git"):
			return fmt.Errorf("%q: a .git component", p)
		}
	}
	return nil
}

// ShowFile returns the content of path in rev (a commit or a tree). A path
// rev does not have is an error wrapping fs.ErrNotExist. A symbolic link's
// content is its target, as git stores it; nothing is followed.
func (r *Repo) ShowFile(ctx context.Context, rev, p string) ([]byte, error) {
	if err := CheckPath(p); err != nil {
		return nil, fmt.Errorf("reading a file at %s: %w", rev, err)
	}
	tree, err := r.resolveTree(ctx, rev)
	if err != nil {
		return nil, err
	}
	entries, err := r.lsTree(ctx, tree, false, p)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.path != p {
			continue
		}
		switch e.typ {
		case "blob":
			blobs, err := r.ReadBlobs(ctx, []string{e.id})
			if err != nil {
				return nil, fmt.Errorf("%s at %s: %w", p, rev, err)
			}
			return blobs[e.id], nil
		case "tree":
			return nil, fmt.Errorf("%s at %s is a directory, not a file", p, rev)
		default:
			return nil, fmt.Errorf("%s at %s is a submodule, not a file", p, rev)
		}
	}
	return nil, fmt.Errorf("%s at %s: %w", p, rev, fs.ErrNotExist)
}

// Export writes the tree of rev (a commit or a tree) into dir, creating it
// if needed: regular files with mode 0644 or 0755, symbolic links as links
// (whatever they point to; they are created last, so no later write can go
// through one), and an empty directory for each submodule. Content comes
// from cat-file, so no smudge filter runs. A tree holding an absolute path,
// a ".." or a ".git" component is refused before anything is written, and
// every write is confined to dir by os.Root.
func (r *Repo) Export(ctx context.Context, rev, dir string) error {
	_, err := r.export(ctx, rev, dir)
	return err
}

// export is Export; it returns the submodule entries (mode 160000) it left
// as empty directories.
func (r *Repo) export(ctx context.Context, rev, dir string) ([]treeEntry, error) {
	tree, err := r.resolveTree(ctx, rev)
	if err != nil {
		return nil, err
	}
	entries, err := r.lsTree(ctx, tree, true)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if err := CheckPath(e.path); err != nil {
			return nil, fmt.Errorf("refusing to export %s: the tree has an unsafe path: %w", rev, err)
		}
		switch e.mode {
		case "100644", "100755", "100664", "120000", "160000":
		default:
			return nil, fmt.Errorf("refusing to export %s: %s has unknown mode %s", rev, e.path, e.mode)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export of %s: %w", rev, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("export of %s: %w", rev, err)
	}
	defer root.Close()
	w := &treeWriter{root: root, dirs: map[string]bool{".": true}}

	var ids []string
	var blobs []treeEntry
	var gitlinks []treeEntry
	for _, e := range entries {
		if e.mode == "160000" {
			gitlinks = append(gitlinks, e)
			if err := w.mkdirs(e.path); err != nil {
				return nil, fmt.Errorf("export of %s: %w", rev, err)
			}
			continue
		}
		ids = append(ids, e.id)
		blobs = append(blobs, e)
	}
	type link struct{ target, path string }
	var links []link
	i := 0
	err = r.catObjects(ctx, ids, func(_, typ string, size int64, content io.Reader) error {
		e := blobs[i]
		i++
		if typ != "blob" {
			return fmt.Errorf("%s is a %s, not a file", e.path, typ)
		}
		if e.mode == "120000" {
			if size > 4096 {
				return fmt.Errorf("%s: symbolic link target of %d bytes", e.path, size)
			}
			target, err := io.ReadAll(content)
			if err != nil {
				return err
			}
			if bytes.IndexByte(target, 0) >= 0 || len(target) == 0 {
				return fmt.Errorf("%s: invalid symbolic link target %q", e.path, target)
			}
			links = append(links, link{string(target), e.path})
			return nil
		}
		perm := fs.FileMode(0o644)
		if e.mode == "100755" {
			perm = 0o755
		}
		return w.writeFile(e.path, content, perm)
	})
	if err != nil {
		return nil, fmt.Errorf("export of %s: %w", rev, err)
	}
	for _, l := range links {
		if err := w.mkdirs(path.Dir(l.path)); err != nil {
			return nil, fmt.Errorf("export of %s: %w", rev, err)
		}
		if err := root.Symlink(l.target, l.path); err != nil {
			return nil, fmt.Errorf("export of %s: %w", rev, err)
		}
	}
	return gitlinks, nil
}

// treeWriter writes files below a root, never through a symbolic link: a
// parent that is not a real directory is an error.
type treeWriter struct {
	root *os.Root
	dirs map[string]bool // directories known to be real
}

// mkdirs makes dir and its parents as real directories; a link or file
// already in the way is an error.
func (w *treeWriter) mkdirs(dir string) error {
	if dir == "." || w.dirs[dir] {
		return nil
	}
	if err := w.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	fi, err := w.root.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := w.root.Mkdir(dir, 0o755); err != nil {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s: in the way of a directory (%s)", dir, fi.Mode().Type())
	}
	w.dirs[dir] = true
	return nil
}

// writeFile creates p (which must not exist) with content and perm.
func (w *treeWriter) writeFile(p string, content io.Reader, perm fs.FileMode) error {
	if err := w.mkdirs(path.Dir(p)); err != nil {
		return err
	}
	f, err := w.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, content); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	// The umask must not decide whether a test script is executable.
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	return f.Close()
}
