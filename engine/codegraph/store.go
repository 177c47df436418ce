package codegraph

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Store keeps indexed units between runs.
type Store interface {
	// Load returns the stored units of repo (an absolute path) by directory.
	Load(ctx context.Context, repo string) (map[string]*Unit, error)
	// Save replaces the given units and deletes the removed directories.
	Save(ctx context.Context, repo string, units []*Unit, removed []string) error
}

// Migrations create the index's own tables. The ledger applies them under
// the name "codegraph": ledger.WithMigrations("codegraph", Migrations).
// One row per directory: its content hash and the unit as JSON. A restart
// reads every row back (a few MB for a 50k-line repository decode in tens of
// milliseconds), and a changed directory rewrites only its own row.
var Migrations = []string{
	`CREATE TABLE codegraph_units (
		repo TEXT NOT NULL,
		dir  TEXT NOT NULL,
		hash TEXT NOT NULL,
		unit BLOB NOT NULL,
		indexed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (repo, dir)
	)`,
}

// TxRunner runs a function in a transaction: the ledger's Read and Write
// (which serialises writers with BEGIN IMMEDIATE).
type TxRunner interface {
	Read(ctx context.Context, fn func(*sql.Tx) error) error
	Write(ctx context.Context, fn func(*sql.Tx) error) error
}

// SQLStore stores units in the codegraph_units table through a TxRunner.
type SQLStore struct{ DB TxRunner }

// Load implements Store.
func (s SQLStore) Load(ctx context.Context, repo string) (map[string]*Unit, error) {
	out := map[string]*Unit{}
	err := s.DB.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT dir, hash, unit FROM codegraph_units WHERE repo = ?`, repo)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dir, hash string
			var data []byte
			if err := rows.Scan(&dir, &hash, &data); err != nil {
				return err
			}
			u := &Unit{}
			if err := json.Unmarshal(data, u); err != nil {
				// A row this version cannot read is simply re-indexed.
				continue
			}
			u.Dir, u.Hash = dir, hash
			out[dir] = u
		}
		return rows.Err()
	})
	return out, err
}

// Save implements Store.
func (s SQLStore) Save(ctx context.Context, repo string, units []*Unit, removed []string) error {
	return s.DB.Write(ctx, func(tx *sql.Tx) error {
		for _, d := range removed {
			if _, err := tx.ExecContext(ctx, `DELETE FROM codegraph_units WHERE repo = ? AND dir = ?`, repo, d); err != nil {
				return err
			}
		}
		for _, u := range units {
			data, err := json.Marshal(u)
			if err != nil {
				return fmt.Errorf("encoding unit %s: %w", u.Dir, err)
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO codegraph_units (repo, dir, hash, unit) VALUES (?, ?, ?, ?)
				 ON CONFLICT (repo, dir) DO UPDATE SET hash = excluded.hash, unit = excluded.unit,
				   indexed_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')`,
				repo, u.Dir, u.Hash, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// MemoryStore keeps units in memory: for a long-running process that
// wants no database, and for tests of the indexer itself.
type MemoryStore struct{ units map[string]map[string][]byte }

// Load implements Store.
func (m *MemoryStore) Load(_ context.Context, repo string) (map[string]*Unit, error) {
	out := map[string]*Unit{}
	for dir, data := range m.units[repo] {
		u := &Unit{}
		if err := json.Unmarshal(data, u); err != nil {
			return nil, err
		}
		out[dir] = u
	}
	return out, nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, repo string, units []*Unit, removed []string) error {
	if m.units == nil {
		m.units = map[string]map[string][]byte{}
	}
	if m.units[repo] == nil {
		m.units[repo] = map[string][]byte{}
	}
	for _, d := range removed {
		delete(m.units[repo], d)
	}
	for _, u := range units {
		data, err := json.Marshal(u)
		if err != nil {
			return err
		}
		m.units[repo][u.Dir] = data
	}
	return nil
}
