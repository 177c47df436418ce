//go:build !unix

package sandbox

import "os"

// No fifos or terminals to open by accident here.
const (
	openNoBlock = 0
	openDirOnly = 0
)

// openLeaf opens p beneath root; a final link is refused by an Lstat
// before the open and a swap after it by comparing what was opened with
// what Lstat saw (Windows' os.Root opens no link in its last step anyway).
func openLeaf(root *os.Root, p string, flag int) (*os.File, error) {
	before, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if before.Mode()&os.ModeSymlink != 0 {
		return nil, ErrSymlink
	}
	f, err := root.OpenFile(p, flag, 0)
	if err != nil {
		return nil, err
	}
	if after, err := f.Stat(); err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, errSwapped
	}
	return f, nil
}
