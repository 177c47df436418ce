//go:build !unix

package git

import "io/fs"

// fileOwner reports no owner where files have no uid (Windows): the shared
// empty HOME cannot be proven ours, so each process makes its own.
func fileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }
