package mutate

import (
	"io/fs"
	"path/filepath"

	"github.com/bcode-dev/bcode/sandbox"
)

// ReadBeneath reads abs, a path beneath root, through sandbox's confined
// reader, up to max bytes. Every engine reads the snapshot, what its
// processes wrote in the scratch directory and bcode's cache this way: the
// snapshot is the agent's tree, and the processes that write the records
// run the agent's code. A refusal (a link, a fifo, a device, a file over
// its cap) is a *sandbox.RefusedError, which the gate reports as a finding.
func ReadBeneath(root, abs string, max int64) ([]byte, error) {
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	return sandbox.ReadFile(root, filepath.ToSlash(rel), max)
}

// WalkBeneath walks abs, a directory beneath root, through the confined
// reader, calling fn with each entry's absolute path; fn may return
// fs.SkipDir. Entries that cannot be read are left out.
func WalkBeneath(root, abs string, fn func(p string, d fs.DirEntry) error) error {
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
