package agentbackend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
)

// TestPrefetchOnlyWhenModulesChange: the host fetches at the start and
// after a turn that changed go.mod or go.sum, not after other turns; a
// fetch that failed is retried; a go.mod replaced by a link to a host file
// is refused without fetching.
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
	calls := 0
	var fail error
	p := &prefetcher{dir: dir, fetch: func(context.Context, string) error { calls++; return fail }}
	step := func(want int) {
		t.Helper()
		if err := p.refresh(ctx); err != nil && fail == nil {
			t.Fatal(err)
		}
		if calls != want {
			t.Fatalf("%d fetches, want %d", calls, want)
		}
	}
	step(1) // the attempt's start
	write("main.go", "package m\n")
	step(1) // a turn that left the module files alone
	write("go.mod", "module m\n\ngo 1.21\n\nrequire example.com/x v1.0.0\n")
	step(2)
	write("go.sum", "example.com/x v1.0.0 h1:abc=\n")
	step(3)
	fail = errors.New("proxy down")
	write("go.mod", "module m\n\ngo 1.22\n")
	if err := p.refresh(ctx); err == nil || calls != 4 {
		t.Fatalf("failed fetch: err %v, %d calls", err, calls)
	}
	fail = nil
	step(5) // retried: the failure was not remembered as done

	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("module stolen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "go.mod"))
	if err := os.Symlink(secret, filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if err := p.refresh(ctx); !errors.Is(err, sandbox.ErrSymlink) || calls != 5 {
		t.Errorf("go.mod as a link: err %v, %d calls; want ErrSymlink and no fetch", err, calls)
	}
}
