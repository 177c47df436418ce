package agentbackend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// TestPrefetchOnlyWhenModulesChange: the host looks at the start and after
// a turn that changed go.mod or go.sum, not after other turns; it fetches
// only what the base's go.sum vouches for; a fetch that failed is retried;
// a go.mod replaced by a link to a host file is refused without fetching.
func TestPrefetchOnlyWhenModulesChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n\ngo 1.21\n")
	known := module.Version{Path: "example.com/known", Version: "v1.0.0"}
	calls := 0
	var fetched []module.Version
	var fail error
	p := &prefetcher{dir: dir, baseSums: map[module.Version]gotool.Sum{known: {GoMod: "h1:x"}},
		fetch: func(_ context.Context, pairs []module.Version, _ map[module.Version]gotool.Sum) error {
			calls++
			fetched = append(fetched, pairs...)
			return fail
		}}
	step := func(want int) {
		t.Helper()
		if err := p.refresh(ctx); err != nil && fail == nil && !errors.Is(err, ErrModuleNotApproved) {
			t.Fatal(err)
		}
		if calls != want {
			t.Fatalf("%d fetches, want %d", calls, want)
		}
	}
	step(0) // the attempt's start: nothing required
	write("main.go", "package m\n")
	step(0) // a turn that left the module files alone
	write("go.mod", "module m\n\ngo 1.21\n\nrequire example.com/known v1.0.0\n")
	step(1)
	write("go.mod", "module m\n\ngo 1.21\n\nrequire (\n\texample.com/known v1.0.0\n\texample.com/unknown v1.0.0\n)\n")
	step(2) // the known one again; the unknown one is never fetched
	for _, v := range fetched {
		if v != known {
			t.Fatalf("fetched %v, which the base does not vouch for", v)
		}
	}
	fail = errors.New("proxy down")
	write("go.sum", "example.com/known v1.0.0/go.mod h1:x\n")
	if err := p.refresh(ctx); err == nil || calls != 3 {
		t.Fatalf("failed fetch: err %v, %d calls", err, calls)
	}
	fail = nil
	step(4) // retried: the failure was not remembered as done

	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("module stolen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "go.mod"))
	if err := os.Symlink(secret, filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if err := p.refresh(ctx); !errors.Is(err, sandbox.ErrSymlink) || calls != 4 {
		t.Errorf("go.mod as a link: err %v, %d calls; want ErrSymlink and no fetch", err, calls)
	}
}
