package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	sqlite3 "modernc.org/sqlite/lib"
)

// explain turns SQLite's terse errors about the file itself ("disk I/O error
// (4874)", "database disk image is malformed (11)") into ones that name the
// file and say what to do. Other errors come back unchanged; the original
// stays wrapped, so errors.Is and sqliteCode still see it.
func explain(path string, err error) error {
	if err == nil {
		return nil
	}
	dir := filepath.Dir(path)
	switch sqliteCode(err) {
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("ledger at %s: the disk is full: %w (free space on the filesystem holding %s, or set BCODE_STATE or --state to a directory on another disk)", path, err, dir)
	case sqlite3.SQLITE_IOERR:
		// SQLite reports a full disk as an I/O error when it is the -shm or
		// -wal file that cannot grow (4874 is SQLITE_IOERR_SHMSIZE). Whether
		// the disk is full is a question the filesystem can answer.
		if diskFull(dir) {
			return fmt.Errorf("ledger at %s: the disk is full: %w (free space on the filesystem holding %s, or set BCODE_STATE or --state to a directory on another disk)", path, err, dir)
		}
		return fmt.Errorf("ledger at %s: I/O error: %w (check the disk holding %s: is it full, read-only or failing?)", path, err, dir)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("ledger at %s is damaged: %w (recover what it holds with `sqlite3 %s '.recover' | sqlite3 %s.recovered` and move the recovered file into its place, or move it aside and bcode starts a new ledger)", path, err, path, path)
	}
	return err
}

// diskFull reports whether dir's filesystem refuses to store 64 KiB more:
// the one portable way to ask, and only ever asked after an I/O error.
func diskFull(dir string) bool {
	f, err := os.CreateTemp(dir, ".bcode-space-*")
	if err != nil {
		return errors.Is(err, syscall.ENOSPC)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, 64<<10)); err != nil {
		return errors.Is(err, syscall.ENOSPC)
	}
	return errors.Is(f.Sync(), syscall.ENOSPC)
}
