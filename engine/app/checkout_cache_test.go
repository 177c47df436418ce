package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCheckoutDirCacheFollowsNewRepositories: the remembered checkout of
// a directory is given again without git while it holds, and not once a
// repository is made inside it (nor after the outer one is removed).
func TestCheckoutDirCacheFollowsNewRepositories(t *testing.T) {
	ctx := context.Background()
	outer, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(outer, "sub", "deeper")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	gitInit := func(dir string) {
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
	}
	gitInit(outer)
	for range 2 {
		top, err := checkoutDir(ctx, sub)
		if err != nil || top != outer {
			t.Fatalf("checkoutDir(%s) = %q, %v; want %s", sub, top, err, outer)
		}
	}
	if _, ok := checkouts.lookup(sub); !ok {
		t.Fatal("the checkout was not remembered")
	}
	inner := filepath.Join(outer, "sub")
	gitInit(inner)
	if top, err := checkoutDir(ctx, sub); err != nil || top != inner {
		t.Fatalf("after git init in %s: checkoutDir = %q, %v", inner, top, err)
	}
	if err := os.RemoveAll(filepath.Join(inner, ".git")); err != nil {
		t.Fatal(err)
	}
	if top, err := checkoutDir(ctx, sub); err != nil || top != outer {
		t.Fatalf("after removing %s/.git: checkoutDir = %q, %v", inner, top, err)
	}
}
