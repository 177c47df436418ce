//go:build !linux && !darwin

package git

import "io/fs"

// indexStat reports that this platform's stat data is not compared with the
// index (Windows has no inode or ctime in fs.FileInfo; git for Windows fills
// those fields its own way), so snapshots hash every tracked file's content.
func indexStat(fs.FileInfo) (st [6]uint32, ok bool) { return st, false }
