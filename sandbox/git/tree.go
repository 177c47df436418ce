package git

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// TreeFile is one entry of ListTree: a file, a symbolic link or a gitlink.
type TreeFile struct {
	Path string
	Mode string
	OID  string
	Size int64 // -1 for a gitlink
}

// ListTree lists every file, link and gitlink of the tree rev names (a
// commit or a tree), recursively, with the blobs' sizes: one `ls-tree -r
// -z --long`, read from the object database only.
func (r *Repo) ListTree(ctx context.Context, rev string) ([]TreeFile, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	out, err := r.plumbing(ctx, invocation{args: []string{"ls-tree", "-r", "-z", "--long", "--full-tree", rev}})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", rev, err)
	}
	return parseLongTree(out)
}

// parseLongTree reads `ls-tree -z --long`: "<mode> SP <type> SP <id> SP+
// <size>\t<path>\0" per entry, the size "-" for a gitlink.
func parseLongTree(out []byte) ([]TreeFile, error) {
	var files []TreeFile
	for len(out) > 0 {
		rec, rest, _ := bytes.Cut(out, []byte{0})
		out = rest
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("ls-tree: malformed entry %q", rec)
		}
		size := int64(-1)
		if f[3] != "-" {
			n, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("ls-tree: malformed size in %q", rec)
			}
			size = n
		}
		files = append(files, TreeFile{Path: string(p), Mode: f[0], OID: f[2], Size: size})
	}
	return files, nil
}

// StreamBlobs calls fn once per id, in order, with a reader of exactly that
// blob's content, through one `cat-file --batch` process: no blob is held
// in memory whole unless fn holds it.
func (r *Repo) StreamBlobs(ctx context.Context, ids []string, fn func(id string, content io.Reader) error) error {
	i := 0
	return r.catObjects(ctx, ids, func(_, typ string, _ int64, content io.Reader) error {
		id := ids[i]
		i++
		if typ != "blob" {
			return fmt.Errorf("object %s is a %s, not a file's content", id, typ)
		}
		return fn(id, content)
	})
}

// CheckAttr returns the attributes git gives each path when the tree rev
// names is what is checked out: the tree is read into a private index and
// `check-attr --cached` reads the .gitattributes files from it (and the
// repository's info/attributes, as the user's git would). Each value is
// "set", "unset", "unspecified" or the attribute's value.
func (r *Repo) CheckAttr(ctx context.Context, rev string, names, paths []string) (map[string]map[string]string, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	if len(names) == 0 || len(paths) == 0 {
		return out, nil
	}
	for _, n := range names {
		if n == "" || strings.HasPrefix(n, "-") || strings.ContainsAny(n, "\x00\n") {
			return nil, fmt.Errorf("check-attr: bad attribute name %q", n)
		}
	}
	dir, err := scratch.MkdirTemp("bcode-attr-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}
	if _, err := r.plumbing(ctx, invocation{args: []string{"read-tree", rev}, env: env}); err != nil {
		return nil, fmt.Errorf("reading %s into a private index: %w", rev, err)
	}
	var in strings.Builder
	for _, p := range paths {
		if strings.IndexByte(p, 0) >= 0 {
			return nil, fmt.Errorf("check-attr: NUL in path %q", p)
		}
		in.WriteString(p)
		in.WriteByte(0)
	}
	args := append([]string{"check-attr", "--cached", "-z", "--stdin"}, names...)
	res, err := r.plumbing(ctx, invocation{args: args, env: env, stdin: strings.NewReader(in.String())})
	if err != nil {
		return nil, fmt.Errorf("reading the attributes of %s: %w", rev, err)
	}
	// -z output: <path> NUL <attribute> NUL <info> NUL, per path and name.
	f := strings.Split(string(res), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		p, name, val := f[i], f[i+1], f[i+2]
		if out[p] == nil {
			out[p] = map[string]string{}
		}
		out[p][name] = val
	}
	return out, nil
}
