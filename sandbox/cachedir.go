package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheEnv names the one directory every cache of bcode's lives under
// (`bcode --cache DIR` sets it for the process and everything it starts).
// A fresh one is a cold start for all of them at once: benchmarks say
// "cold" only with an empty one. The go command's own build cache is the
// user's, not bcode's, and is not moved by it.
const CacheEnv = "BCODE_CACHE"

// CacheDir is the directory of one of bcode's caches, named sub:
// $BCODE_CACHE/sub, else the user's cache directory's bcode/sub
// ($XDG_CACHE_HOME/bcode/sub on Linux). It is the one place that decides,
// so no cache can be left behind when the setting moves them.
func CacheDir(sub string) (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("sandbox: %s=%q is not an absolute path", CacheEnv, d)
		}
		return filepath.Join(d, sub), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("sandbox: no cache directory for bcode (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(d, "bcode", sub), nil
}
