package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bcode-dev/bcode/sandbox"
)

// UseCacheDir points every cache of bcode's at dir for this process and
// the processes it starts (sandbox.CacheEnv): `bcode --cache DIR`. dir is
// made if missing; a path that is not a directory, or one bcode cannot
// write, is refused before any command runs, rather than found out by
// the first cache that tries.
func UseCacheDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return fmt.Errorf("app: cache directory: %w", err)
	}
	probe, err := os.CreateTemp(abs, ".bcode-probe-")
	if err != nil {
		return fmt.Errorf("app: cache directory is not writable: %w", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return os.Setenv(sandbox.CacheEnv, abs)
}
