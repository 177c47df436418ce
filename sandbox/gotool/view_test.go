package gotool

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
)

// TestModuleViewHoldsExactlyGoSum: a view of bcode's own go.sum, from the
// host's cache, holds those modules (download files and trees) and no
// other module of the cache.
func TestModuleViewHoldsExactlyGoSum(t *testing.T) {
	tc, sums := ownSums(t)
	dst := filepath.Join(t.TempDir(), "view")
	missing, err := tc.ModuleView(dst, sums)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for v := range sums {
		p, _ := module.EscapePath(v.Path)
		in[p] = true
	}
	ents, err := os.ReadDir(filepath.Join(tc.GOMODCACHE, "cache", "download"))
	if err != nil {
		t.Fatal(err)
	}
	// Every module path in the view's download directory is one go.sum names.
	err = filepath.WalkDir(filepath.Join(dst, "cache", "download"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "@v" {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dst, "cache", "download"), filepath.Dir(p))
		if !in[filepath.ToSlash(rel)] {
			t.Errorf("the view holds %s, which go.sum does not name", rel)
		}
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	linked := 0
	for v, s := range sums {
		if s.Zip == "" || containsVersion(missing, v) {
			continue
		}
		p, _ := module.EscapePath(v.Path)
		ver, _ := module.EscapeVersion(v.Version)
		if fi, err := os.Stat(filepath.Join(dst, filepath.FromSlash(p)+"@"+ver)); err != nil || !fi.IsDir() {
			t.Errorf("%s: no tree in the view: %v", String(v), err)
		}
		linked++
	}
	t.Logf("%d versions in go.sum, %d trees linked, %d missing from the host cache; the cache holds %d top-level hosts", len(sums), linked, len(missing), len(ents))
}

func containsVersion(vs []module.Version, v module.Version) bool {
	for _, w := range vs {
		if w == v {
			return true
		}
	}
	return false
}

// ownSums is the host toolchain and bcode's own go.sum.
func ownSums(t testing.TB) (*Toolchain, map[module.Version]Sum) {
	t.Helper()
	tc, err := Resolve(context.Background())
	if err != nil {
		t.Skip("needs go:", err)
	}
	b, err := os.ReadFile("../../go.sum")
	if err != nil || !bytes.Contains(b, []byte("h1:")) {
		t.Skip("no go.sum")
	}
	if strings.TrimSpace(tc.GOMODCACHE) == "" {
		t.Skip("no module cache")
	}
	return tc, ParseSum(b)
}

// BenchmarkModuleView is the cost of a task's view of bcode's own go.sum
// (one per agent attempt and one per gate check).
func BenchmarkModuleView(b *testing.B) {
	tc, sums := ownSums(b)
	for b.Loop() {
		dst := filepath.Join(b.TempDir(), "view")
		if _, err := tc.ModuleView(dst, sums); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(dst)
	}
}
