package sandbox_test

import (
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
)

func TestCacheDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	t.Setenv(sandbox.CacheEnv, "")
	if d, err := sandbox.CacheDir("cochange"); err != nil || d != filepath.Join(xdg, "bcode", "cochange") {
		t.Errorf("default: %q, %v; want under $XDG_CACHE_HOME/bcode", d, err)
	}
	one := t.TempDir()
	t.Setenv(sandbox.CacheEnv, one)
	if d, err := sandbox.CacheDir("node-packages"); err != nil || d != filepath.Join(one, "node-packages") {
		t.Errorf("with %s: %q, %v", sandbox.CacheEnv, d, err)
	}
	t.Setenv(sandbox.CacheEnv, "relative/dir")
	if d, err := sandbox.CacheDir("x"); err == nil {
		t.Errorf("a relative %s gave %q, want an error", sandbox.CacheEnv, d)
	}
}
