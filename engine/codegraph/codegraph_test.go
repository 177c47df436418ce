package codegraph

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/sandbox"
)

// fixture is a small module: package store declares an interface and a
// helper, package mem implements the interface, package app calls through
// the interface and directly across packages, and tests reach app.Run.
const fixture = `
-- go.mod --
module example.com/shop

go 1.22
-- store/store.go --
package store

// Store keeps things.
type Store interface {
	Get(key string) (string, bool)
	Put(key, value string)
}

// Normalize is called from other packages.
func Normalize(key string) string { return "k:" + key }
-- mem/mem.go --
package mem

import "example.com/shop/store"

// Map is an in-memory Store.
type Map struct{ m map[string]string }

func New() *Map { return &Map{m: map[string]string{}} }

func (s *Map) Get(key string) (string, bool) { v, ok := s.m[store.Normalize(key)]; return v, ok }

func (s *Map) Put(key, value string) { s.m[store.Normalize(key)] = value }
-- disk/disk.go --
package disk

// File is another Store, in a package that does not import store.
type File struct{ path string }

func (f File) Get(key string) (string, bool) { return "", false }

func (f File) Put(key, value string) {}

// Unrelated has a Get but no Put.
type Unrelated struct{}

func (Unrelated) Get(key string) (string, bool) { return "", false }
-- app/app.go --
package app

import (
	"example.com/shop/mem"
	"example.com/shop/store"
)

// Run stores a value and reads it back through the interface.
func Run(s store.Store) string {
	s.Put("a", "1")
	v, _ := s.Get("a")
	return v
}

func Main() string { return Run(mem.New()) }
-- app/app_test.go --
package app

import "testing"

func TestMain_(t *testing.T) {
	if Main() != "1" {
		t.Fatal("bad")
	}
}

func helper() string { return Main() }
-- app/ext_test.go --
package app_test

import (
	"testing"

	"example.com/shop/app"
)

func TestRunExternal(t *testing.T) { _ = app.Main() }
`

func writeFixture(t *testing.T, archive string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range txtar.Parse([]byte(archive)).Files {
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGraphRelations(t *testing.T) {
	repo := writeFixture(t, fixture)
	g, st, err := Index(context.Background(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Errors) > 0 {
		t.Fatalf("index errors: %v", st.Errors)
	}
	const p = "example.com/shop/"

	t.Run("callers across packages", func(t *testing.T) {
		got := g.Callers(p + "store.Normalize")
		want := []string{p + "mem.Map.Get", p + "mem.Map.Put"}
		if !slices.Equal(got, want) {
			t.Fatalf("callers of Normalize = %v, want %v", got, want)
		}
	})
	t.Run("interface implementations", func(t *testing.T) {
		got := g.Implementations(p + "store.Store")
		want := []string{p + "disk.File", p + "mem.Map"}
		if !slices.Equal(got, want) {
			t.Fatalf("implementations of Store = %v, want %v", got, want)
		}
		if impl := g.Implements(p + "disk.Unrelated"); len(impl) != 0 {
			t.Fatalf("Unrelated has no Put but implements %v", impl)
		}
	})
	t.Run("dispatch makes interface callers callers of the implementation", func(t *testing.T) {
		got := g.Callers(p + "mem.Map.Put")
		if !slices.Contains(got, p+"app.Run") {
			t.Fatalf("callers of Map.Put = %v, want app.Run among them (via store.Store.Put)", got)
		}
		callees := g.Callees(p + "app.Run")
		for _, want := range []string{p + "store.Store.Put", p + "mem.Map.Put", p + "disk.File.Put"} {
			if !slices.Contains(callees, want) {
				t.Fatalf("callees of Run = %v, want %s", callees, want)
			}
		}
	})
	t.Run("tests that reach a function", func(t *testing.T) {
		var got []string
		for _, r := range g.TestsReaching(p+"mem.Map.Put", 0) {
			got = append(got, r.ID)
		}
		want := []string{p + "app.TestMain_", p + "app_test.TestRunExternal"}
		if !slices.Equal(got, want) {
			t.Fatalf("tests reaching Map.Put = %v, want %v", got, want)
		}
		if s := g.Symbols[p+"app.helper"]; s == nil || s.Test {
			t.Fatalf("helper in a test file must be indexed and not be a test entry point: %+v", s)
		}
	})
	t.Run("symbols have lines and signatures", func(t *testing.T) {
		s := g.Symbols[p+"app.Run"]
		if s == nil || s.File != "app/app.go" || s.Line != 8 || s.EndLine != 13 || s.Signature != "func Run(s store.Store) string" {
			t.Fatalf("app.Run = %+v", s)
		}
		enc := g.Enclosing("app/app.go", 10, 10)
		if len(enc) != 1 || enc[0].ID != p+"app.Run" {
			t.Fatalf("enclosing line 10 = %v", enc)
		}
	})
}

func TestSymlinkedGoFileIsNotRead(t *testing.T) {
	repo := writeFixture(t, fixture)
	outside := t.TempDir()
	secret := filepath.Join(outside, "stolen.go")
	if err := os.WriteFile(secret, []byte("package app\n\nfunc StolenFromHost() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(repo, "app", "stolen.go")); err != nil {
		t.Fatal(err)
	}
	g, st, err := Index(context.Background(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Refused, []string{"app/stolen.go"}) {
		t.Fatalf("refused = %v, want the planted link", st.Refused)
	}
	if _, ok := g.Symbols["example.com/shop/app.StolenFromHost"]; ok {
		t.Fatal("a symbol from a file outside the repository was indexed through a symlink")
	}
	if _, ok := g.Symbols["example.com/shop/app.Run"]; !ok {
		t.Fatal("the package with the planted link must still be indexed")
	}
}

// openLedger opens the real SQLite ledger at path with the code index, so
// the store is tested against the database it runs on.
func openLedger(t *testing.T, path string) LedgerStore {
	t.Helper()
	led, err := ledger.Open(context.Background(), path, ledger.WithCodeIndex())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	return LedgerStore{Ledger: led}
}

func TestIndexReusedAfterRestartAndOnlyChangedPackagesReindexed(t *testing.T) {
	repo := writeFixture(t, fixture)
	dbPath := filepath.Join(t.TempDir(), "ledger.db")
	ctx := context.Background()

	g1, st, err := Index(ctx, repo, openLedger(t, dbPath))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"app", "disk", "mem", "store"}; !slices.Equal(st.Reindexed, want) {
		t.Fatalf("first run indexed %v, want %v", st.Reindexed, want)
	}

	// A "restart": a new connection to the same file, nothing changed.
	g2, st, err := Index(ctx, repo, openLedger(t, dbPath))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Reindexed) != 0 || st.Reused != 4 {
		t.Fatalf("after restart: reindexed %v, reused %d; want nothing re-indexed, 4 reused", st.Reindexed, st.Reused)
	}
	if !slices.Equal(g1.IDs(), g2.IDs()) || !slices.Equal(g1.Callers("example.com/shop/mem.Map.Put"), g2.Callers("example.com/shop/mem.Map.Put")) {
		t.Fatal("the graph read back from the store differs from the one indexed")
	}

	// Change a package nothing imports: only it is re-indexed.
	if err := os.WriteFile(filepath.Join(repo, "disk", "disk.go"), []byte("package disk\n\ntype File struct{}\n\nfunc (File) Get(string) (string, bool) { return \"\", false }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g3, st, err := Index(ctx, repo, openLedger(t, dbPath))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Reindexed, []string{"disk"}) {
		t.Fatalf("after editing disk: reindexed %v, want [disk]", st.Reindexed)
	}
	if impl := g3.Implementations("example.com/shop/store.Store"); !slices.Equal(impl, []string{"example.com/shop/mem.Map"}) {
		t.Fatalf("disk.File lost Put, implementations now %v", impl)
	}

	// Change a package others import: it and its direct importers.
	if err := os.WriteFile(filepath.Join(repo, "store", "extra.go"), []byte("package store\n\nfunc Extra() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, st, err = Index(ctx, repo, openLedger(t, dbPath))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"app", "mem", "store"}; !slices.Equal(st.Reindexed, want) {
		t.Fatalf("after editing store: reindexed %v, want %v", st.Reindexed, want)
	}
}

func TestNoGoModule(t *testing.T) {
	_, _, err := Index(context.Background(), t.TempDir(), nil)
	if err == nil {
		t.Fatal("want an error for a directory without go.mod")
	}
}

func TestWatchReportsChangedDirectories(t *testing.T) {
	repo := writeFixture(t, fixture)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan []string, 4)
	done := make(chan error, 1)
	go func() { done <- WatchSkipping(ctx, repo, nil, func(dirs []string) { got <- dirs }) }()
	// Give the watcher time to register its directories.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.WriteFile(filepath.Join(repo, "mem", "extra.go"), []byte("package mem\n\nfunc Extra() {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case dirs := <-got:
			if !slices.Equal(dirs, []string{"mem"}) {
				t.Fatalf("onChange(%v), want [mem]", dirs)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Watch returned %v after cancel", err)
			}
			return
		case <-time.After(500 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no change reported within 5s")
			}
		}
	}
}

// TestScanTreeSkipsWhatIsNotTheModule: the scan hashes the module's Go
// directories and none below a nested go.mod (another module, whatever
// kind of entry its go.mod is), below a directory skipDir names, or
// reached through a directory link.
func TestScanTreeSkipsWhatIsNotTheModule(t *testing.T) {
	repo := writeFixture(t, fixture)
	for name, body := range map[string]string{
		"nested/go.mod":           "module example.com/nested\n",
		"nested/n.go":             "package nested\n",
		"nested/deep/d.go":        "package deep\n",
		"odd/go.mod/keep":         "a directory named go.mod\n",
		"odd/o.go":                "package odd\n",
		"vendor/v/v.go":           "package v\n",
		"testdata/t/t.go":         "package t\n",
		"outside/real/r.go":       "package real\n",
		"app/sub/kept.go":         "package sub\n",
		"app/sub/notgo.txt":       "text\n",
		"app/sub/deeper/deep.go":  "package deeper\n",
		"app/sub/deeper/README":   "\n",
		"app/sub/deeper/x/y/z.go": "package y\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(repo, "outside"), filepath.Join(repo, "linked")); err != nil {
		t.Fatal(err)
	}
	conf, err := sandbox.OpenConfined(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer conf.Close()
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	scan, err := ScanTree(conf, gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"app/sub", "app/sub/deeper", "app/sub/deeper/x/y", "outside/real"} {
		if scan.Hashes[dir] == "" {
			t.Errorf("%s not hashed: %v", dir, slices.Sorted(maps.Keys(scan.Hashes)))
		}
	}
	for _, dir := range []string{"nested", "nested/deep", "odd", "vendor/v", "testdata/t", "linked/real"} {
		if _, ok := scan.Hashes[dir]; ok {
			t.Errorf("%s hashed: it is not the module's", dir)
		}
	}
}
