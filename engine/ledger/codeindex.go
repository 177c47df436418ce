package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// codeIndexSet names the code index's migrations in schema_migrations. The
// name is in every ledger that ever held the index: never change it.
const codeIndexSet = "codegraph"

// codeIndexMigrations create the code index's table: one row per directory,
// its content hash and the unit as JSON. A restart reads every row back (a
// few MB for a 50k-line repository decode in tens of milliseconds), and a
// changed directory rewrites only its own row. Never edit a step that has
// shipped; append a new one.
var codeIndexMigrations = []string{
	`CREATE TABLE codegraph_units (
		repo TEXT NOT NULL,
		dir  TEXT NOT NULL,
		hash TEXT NOT NULL,
		unit BLOB NOT NULL,
		indexed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (repo, dir)
	)`,
}

// WithCodeIndex adds the code index's table to the ledger (its own
// migration set, "codegraph"), for CodeIndex and SaveCodeIndex.
func WithCodeIndex() Option { return WithMigrations(codeIndexSet, codeIndexMigrations) }

// CodeIndexEntry is one directory of a repository's code index: its
// content hash and the indexed unit, encoded by the indexer (the ledger
// does not read it).
type CodeIndexEntry struct {
	Dir  string
	Hash string
	Unit []byte
}

// CodeIndex returns the stored index entries of repo (an absolute path).
func (l *Ledger) CodeIndex(ctx context.Context, repo string) ([]CodeIndexEntry, error) {
	if err := l.needSet(codeIndexSet, "WithCodeIndex"); err != nil {
		return nil, err
	}
	var out []CodeIndexEntry
	err := l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT dir, hash, unit FROM codegraph_units WHERE repo = ?`, repo)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e CodeIndexEntry
			if err := rows.Scan(&e.Dir, &e.Hash, &e.Unit); err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

// SaveCodeIndex replaces the given entries of repo and deletes the removed
// directories, in one transaction.
func (l *Ledger) SaveCodeIndex(ctx context.Context, repo string, entries []CodeIndexEntry, removed []string) error {
	if err := l.needSet(codeIndexSet, "WithCodeIndex"); err != nil {
		return err
	}
	return l.Write(ctx, func(tx *sql.Tx) error {
		for _, d := range removed {
			if _, err := tx.ExecContext(ctx, `DELETE FROM codegraph_units WHERE repo = ? AND dir = ?`, repo, d); err != nil {
				return err
			}
		}
		for _, e := range entries {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO codegraph_units (repo, dir, hash, unit) VALUES (?, ?, ?, ?)
				 ON CONFLICT (repo, dir) DO UPDATE SET hash = excluded.hash, unit = excluded.unit,
				   indexed_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')`,
				repo, e.Dir, e.Hash, e.Unit); err != nil {
				return err
			}
		}
		return nil
	})
}

// needSet reports an error unless the migration set was registered at Open:
// without it the table may not exist, and SQLite's "no such table" would
// not say which option was missing.
func (l *Ledger) needSet(set, option string) error {
	for _, s := range l.opts.sets {
		if s.name == set {
			return nil
		}
	}
	return fmt.Errorf("ledger at %s: opened without ledger.%s(); open it with that option", l.path, option)
}
