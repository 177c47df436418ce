package golang

import (
	"io/fs"
	"path/filepath"

	"github.com/bcode-dev/bcode/sandbox"
)

// Every read of the snapshot, of what the tests and tools wrote in the
// scratch directory, and of bcode's caches goes through sandbox's confined
// reader: the snapshot is the agent's tree, and the tests that write the
// profiles and results run the agent's code. A refusal (a link, a fifo, a
// device, a file over its cap) comes back as a *sandbox.RefusedError, which
// the gate reports as a finding.

// Caps on what one read may hold.
const (
	maxSourceFile = 16 << 20  // a Go or Python source, go.mod, go.sum
	maxCoverOut   = 64 << 20  // the cover tool's rewrite of one source
	maxCoverRun   = 256 << 20 // one process's per-test coverage record
	maxProfile    = 256 << 20 // one coverage profile
	maxCacheEntry = 64 << 20  // a kept baseline or list
	maxResults    = 256 << 20 // the Python engine's records
	maxBinary     = 2 << 30   // a test binary copied to or from the cache
	maxExportData = 512 << 20 // one package's export data
)

// readDirBeneath lists abs, a directory beneath root.
func readDirBeneath(root, abs string) ([]fs.DirEntry, error) {
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	c, err := sandbox.OpenConfined(root)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadDir(filepath.ToSlash(rel))
}

// existsBeneath reports whether abs, beneath root, names anything (a link
// too: whether it may be read is the read's decision).
func existsBeneath(root, abs string) bool {
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return false
	}
	c, err := sandbox.OpenConfined(root)
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.Lstat(filepath.ToSlash(rel))
	return err == nil
}
