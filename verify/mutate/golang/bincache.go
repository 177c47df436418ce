package golang

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// The schema binary is kept across runs, keyed by everything it is built
// from: the baseline's key (toolchain, the package's directory, go.mod,
// go.sum, the module's packages it imports) and the schema's files. A run
// whose package and mutants did not change (a save elsewhere, a second
// `bcode evidence`) then builds nothing. One binary per package is kept.

// schemaKey is the cache key of p's schema binary built from files.
func (s *session) schemaKey(p *pkg, files map[string][]byte) (string, error) {
	base, err := s.baseKey(p)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "bcode-schema-bin-v4\x00%s\x00%s\x00", base, strings.Join(s.buildFlags(), " "))
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(h, "%s\x00%x\x00", n, sum)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// baseKey is cacheKey, computed once per package.
func (s *session) baseKey(p *pkg) (string, error) {
	if p.key != "" {
		return p.key, nil
	}
	k, err := s.cacheKey(p)
	if err == nil {
		p.key = k
	}
	return k, err
}

func (s *session) binCacheDir(p *pkg) string {
	sum := sha256.Sum256([]byte(p.list.ImportPath))
	return filepath.Join(s.opts.CacheDir, "bin", hex.EncodeToString(sum[:8]))
}

// cachedSchema copies p's cached schema binary for key into the run's
// temporary directory (where a sandboxed runner can execute it) and
// returns its path, or "" when there is none.
func (s *session) cachedSchema(p *pkg, key string) string {
	if s.opts.NoCache || key == "" {
		return ""
	}
	src := filepath.Join(s.binCacheDir(p), key+".test")
	dst := filepath.Join(s.tmp, fmt.Sprintf("pkg%d.cached.test", p.num))
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	if err := copyFile(src, dst, 0o755); err != nil {
		return ""
	}
	return dst
}

// storeSchema keeps bin as p's schema binary for key, replacing the
// package's earlier one. A cache that cannot be written only costs time.
func (s *session) storeSchema(p *pkg, key, bin string) {
	if key == "" {
		return
	}
	dir := s.binCacheDir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.test"))
	tmp := filepath.Join(dir, key+".tmp"+strconv.Itoa(os.Getpid()))
	if err := copyFile(bin, tmp, 0o755); err != nil {
		_ = os.Remove(tmp)
		return
	}
	dst := filepath.Join(dir, key+".test")
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return
	}
	for _, o := range old {
		if o != dst {
			_ = os.Remove(o)
		}
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := sandbox.OpenPath(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, maxBinary+1))
	if err == nil && n > maxBinary {
		err = fmt.Errorf("copying %s: over %d bytes", src, int64(maxBinary))
	}
	if err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
