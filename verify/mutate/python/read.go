package python

import (
	"io/fs"
	"path/filepath"

	"github.com/bcode-dev/bcode/sandbox"
)

// Every read of the snapshot, of what the engine's processes wrote in the
// scratch directory, and of bcode's cache goes through sandbox's confined
// reader: the snapshot is the agent's tree, and the processes that write
// the records run the agent's code. A refusal (a link, a fifo, a device, a
// file over its cap) comes back as a *sandbox.RefusedError, which the gate
// reports as a finding.

// Caps on what one read may hold.
const (
	maxSourceFile = 4 << 20   // a changed Python source
	maxTestSource = 1 << 20   // a test file a report embeds
	maxCacheEntry = 64 << 20  // a kept baseline
	maxResults    = 256 << 20 // the Python engine's records
)

// readCapped reads abs, a path beneath root, through the confined reader.
func readCapped(root, abs string, max int64) ([]byte, error) {
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	return sandbox.ReadFile(root, filepath.ToSlash(rel), max)
}

// walkBeneath walks abs, a directory beneath root, calling fn with each
// entry's absolute path; fn may return fs.SkipDir.
func walkBeneath(root, abs string, fn func(p string, d fs.DirEntry) error) error {
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return err
	}
	c, err := sandbox.OpenConfined(root)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.WalkDir(filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		return fn(filepath.Join(root, filepath.FromSlash(p)), d)
	})
}
