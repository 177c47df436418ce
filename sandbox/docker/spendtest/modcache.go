package spendtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// The two modules of the fixture's host module cache: the task's go.sum
// names Allowed; Private is another project's, in the same host cache.
var (
	Allowed = module.Version{Path: "example.com/spend/allowed", Version: "v1.0.0"}
	Private = module.Version{Path: "example.com/spend/private", Version: "v1.0.0"}
)

// PrivateSecret is in Private's source: it must never be readable in the
// container.
const PrivateSecret = "spendtest-private-module-secret-7f3a"

// fixtureCache writes a module cache in the go command's layout holding
// Allowed and Private (download files and extracted trees), and returns
// its directory and a go.sum naming Allowed alone.
func fixtureCache(t testing.TB) (string, []byte) {
	t.Helper()
	cache := t.TempDir()
	var sum bytes.Buffer
	for _, m := range []struct {
		v    module.Version
		body string
	}{
		{Allowed, "package allowed\n\n// Answer is what the worktree's program prints.\nconst Answer = 42\n"},
		{Private, "package private\n\nconst Secret = \"" + PrivateSecret + "\"\n"},
	} {
		h1, modh1 := writeModule(t, cache, m.v, m.body)
		if m.v == Allowed {
			fmt.Fprintf(&sum, "%s %s %s\n%s %s/go.mod %s\n", m.v.Path, m.v.Version, h1, m.v.Path, m.v.Version, modh1)
		}
	}
	return cache, sum.Bytes()
}

// writeModule puts v, one Go file of body, into cache as `go mod download`
// would, and returns its go.sum hashes.
func writeModule(t testing.TB, cache string, v module.Version, body string) (string, string) {
	t.Helper()
	src := t.TempDir()
	gomod := "module " + v.Path + "\n\ngo 1.21\n"
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644))
	must(t, os.WriteFile(filepath.Join(src, filepath.Base(v.Path)+".go"), []byte(body), 0o644))
	dl := filepath.Join(cache, "cache", "download", v.Path, "@v")
	must(t, os.MkdirAll(dl, 0o755))
	zipPath := filepath.Join(dl, v.Version+".zip")
	zf, err := os.Create(zipPath)
	must(t, err)
	must(t, modzip.CreateFromDir(zf, v, src))
	must(t, zf.Close())
	h1, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	must(t, err)
	modh1, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return os.Open(filepath.Join(src, "go.mod"))
	})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dl, v.Version+".mod"), []byte(gomod), 0o444))
	must(t, os.WriteFile(filepath.Join(dl, v.Version+".ziphash"), []byte(h1), 0o444))
	must(t, os.WriteFile(filepath.Join(dl, v.Version+".info"), []byte(`{"Version":"`+v.Version+`"}`), 0o444))
	tree := filepath.Join(cache, v.Path+"@"+v.Version)
	must(t, os.MkdirAll(tree, 0o755))
	for _, name := range []string{"go.mod", filepath.Base(v.Path) + ".go"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(tree, name), b, 0o444))
	}
	return h1, modh1
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
