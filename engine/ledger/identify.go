package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"
)

// applicationID marks a SQLite file as a bcode ledger ("bcod" in the
// header's application_id field, offset 68). Every ledger bcode creates gets
// it; one made before it existed gets it on its next open, once its schema
// has shown it is bcode's.
const applicationID = 0x62636f64

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// identify decides, before anything opens the file for writing, whether the
// file at path may be used as a ledger. Opening a database in WAL mode
// rewrites its header for good, and the migrations would add tables, so a
// file that is not known to be bcode's must be refused untouched: this reads
// the 100-byte header with a plain read, and only for a file with no
// application id at all looks at its schema through an immutable,
// read-only connection (no lock, no journal, no -wal or -shm file).
func identify(ctx context.Context, path string) error {
	var hdr [100]byte
	var n int
	var err error
	// Another bcode may be creating this very ledger: a header read while
	// its first page is being written can come back short or zero. Such a
	// header gets a few more looks before it counts as not SQLite.
	for try := 0; ; try++ {
		f, oerr := os.Open(path)
		if errors.Is(oerr, os.ErrNotExist) {
			return nil
		}
		if oerr != nil {
			return fmt.Errorf("ledger at %s: %w", path, oerr)
		}
		hdr = [100]byte{}
		n, err = io.ReadFull(f, hdr[:])
		f.Close()
		if try == 4 || (n == len(hdr) && hdr != [100]byte{}) || n == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil // an empty file: SQLite makes a new database of it
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("ledger at %s: %w", path, err)
	case n < len(hdr) || !bytes.Equal(hdr[:16], sqliteMagic):
		return fmt.Errorf("ledger at %s is not a SQLite database: %w; move it aside and bcode starts a new ledger, or set BCODE_STATE or --state to another directory", path, ErrForeign)
	}
	switch id := binary.BigEndian.Uint32(hdr[68:72]); id {
	case applicationID:
		return nil
	case 0:
	default:
		return fmt.Errorf("ledger at %s is a SQLite database of another program (application_id %#x): %w; set BCODE_STATE or --state to another directory", path, id, ErrForeign)
	}
	err = identifySchema(ctx, path, true)
	if err != nil && !errors.Is(err, ErrForeign) && (hdr[18] == 2 || hdr[19] == 2) {
		// A WAL database's file can be caught mid-checkpoint (a ledger
		// another bcode just created), which an immutable read may see
		// half-written. Read it again the ordinary read-only way, through
		// the WAL and its locks; that still never writes the database.
		err = identifySchema(ctx, path, false)
	}
	return err
}

// ErrForeign is the error Open returns for a file at the ledger path that is
// not a bcode ledger. The file has not been written to.
var ErrForeign = errors.New("ledger: not a bcode ledger")

// identifySchema looks, read-only, at the schema of a database with no
// application id: an empty one becomes a new ledger; one with bcode's
// schema_migrations (columns "set", version, applied_at, and a row of the
// core set) is a ledger made before the application id; anything else is
// another program's.
func identifySchema(ctx context.Context, path string, immutable bool) error {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	q.Add("_pragma", "query_only(1)")
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("ledger at %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	var objects, migrations int
	err = db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations')`).Scan(&objects, &migrations)
	if err != nil {
		return explain(path, fmt.Errorf("reading its schema: %w", err))
	}
	if objects == 0 {
		return nil
	}
	if migrations == 0 {
		return fmt.Errorf("ledger at %s is a SQLite database of another program (it has %d schema objects and no schema_migrations table): %w; set BCODE_STATE or --state to another directory", path, objects, ErrForeign)
	}
	var cols int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM pragma_table_info('schema_migrations') WHERE name IN ('set', 'version', 'applied_at')`).Scan(&cols); err != nil {
		return explain(path, fmt.Errorf("reading its schema: %w", err))
	}
	var core int
	if cols == 3 {
		if err := db.QueryRowContext(ctx,
			`SELECT count(*) FROM schema_migrations WHERE "set" = ?`, coreSet).Scan(&core); err != nil {
			return explain(path, fmt.Errorf("reading schema_migrations: %w", err))
		}
	}
	if core == 0 {
		return fmt.Errorf("ledger at %s is a SQLite database of another program (its schema_migrations table is not bcode's): %w; set BCODE_STATE or --state to another directory", path, ErrForeign)
	}
	return nil
}
