package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// coreSet names the ledger's own migrations in schema_migrations.
const coreSet = "ledger"

type migrationSet struct {
	name  string
	steps []string
}

func validateSets(sets []migrationSet) error {
	seen := map[string]bool{coreSet: true}
	for _, s := range sets {
		switch {
		case strings.TrimSpace(s.name) == "":
			return errors.New("WithMigrations: the set name is empty")
		case s.name == coreSet:
			return fmt.Errorf("WithMigrations: the set name %q is the ledger's own", coreSet)
		case seen[s.name]:
			return fmt.Errorf("WithMigrations: the set %q is registered twice", s.name)
		}
		seen[s.name] = true
		for i, step := range s.steps {
			if strings.TrimSpace(step) == "" {
				return fmt.Errorf("WithMigrations: step %d of set %q is empty", i+1, s.name)
			}
		}
	}
	return nil
}

// migrate applies every step not yet recorded, for the core set and each
// registered set, in one BEGIN IMMEDIATE transaction: two processes opening a
// new ledger at once serialise here, and the second finds nothing to do.
// A failing step rolls back everything, so a ledger is never half-migrated.
func (l *Ledger) migrate(ctx context.Context) error {
	sets := append([]migrationSet{{name: coreSet, steps: coreMigrations}}, l.opts.sets...)
	return l.Write(ctx, func(tx *sql.Tx) error {
		var tracked int
		if err := tx.QueryRowContext(ctx,
			`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&tracked); err != nil {
			return l.openError(err)
		}
		if tracked == 0 {
			// A database with tables of its own but no migration record is
			// some other program's: adding bcode's tables to it would be rude
			// and the result would be neither.
			var others int
			if err := tx.QueryRowContext(ctx,
				`SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'`).Scan(&others); err != nil {
				return l.openError(err)
			}
			if others > 0 {
				return fmt.Errorf("ledger at %s is a SQLite database of another program (it has %d schema objects and no schema_migrations table); set BCODE_STATE or --state to another directory", l.path, others)
			}
			if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_migrations (
				"set"      TEXT    NOT NULL,
				version    INTEGER NOT NULL,
				applied_at TEXT    NOT NULL,
				PRIMARY KEY ("set", version)
			) STRICT`); err != nil {
				return fmt.Errorf("ledger at %s: creating schema_migrations: %w", l.path, err)
			}
		}
		// Mark the file as bcode's (see identify); a ledger made before the
		// mark gets it here, now that its schema has shown whose it is.
		var id int64
		if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err != nil {
			return l.openError(err)
		}
		if uint32(id) != applicationID {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d`, int32(applicationID))); err != nil {
				return fmt.Errorf("ledger at %s: setting application_id: %w", l.path, err)
			}
		}
		for _, s := range sets {
			if err := l.applySet(ctx, tx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

func (l *Ledger) applySet(ctx context.Context, tx *sql.Tx, s migrationSet) error {
	var current int
	if err := tx.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(version), 0) FROM schema_migrations WHERE "set" = ?`, s.name).Scan(&current); err != nil {
		return fmt.Errorf("ledger at %s: reading schema_migrations: %w", l.path, err)
	}
	known := len(s.steps)
	if current > known {
		if s.name == coreSet {
			return fmt.Errorf("ledger at %s was written by a newer bcode (schema %d > %d)", l.path, current, known)
		}
		return fmt.Errorf("ledger at %s was written by a newer bcode (schema %d > %d of migration set %q)", l.path, current, known, s.name)
	}
	for v := current + 1; v <= known; v++ {
		if _, err := tx.ExecContext(ctx, s.steps[v-1]); err != nil {
			return fmt.Errorf("ledger at %s: migration %s/%d: %w", l.path, s.name, v, err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations ("set", version, applied_at) VALUES (?, ?, ?)`,
			s.name, v, formatTime(l.opts.now())); err != nil {
			return fmt.Errorf("ledger at %s: recording migration %s/%d: %w", l.path, s.name, v, err)
		}
	}
	return nil
}

// coreMigrations is the ledger's schema, one step per version. Never edit a
// step that has shipped; append a new one.
//
// Times are TEXT in UTC with nine fixed fraction digits (see formatTime), so
// they sort as strings and read as RFC 3339. JSON columns are TEXT checked by
// json_valid. Tables are STRICT so a wrongly typed value fails loudly instead
// of being stored as something else.
var coreMigrations = []string{
	`
CREATE TABLE tasks (
	id         TEXT PRIMARY KEY,
	repo       TEXT NOT NULL,
	goal       TEXT NOT NULL,
	selection  TEXT CHECK (selection IS NULL OR json_valid(selection)),
	criteria   TEXT CHECK (criteria IS NULL OR json_valid(criteria)),
	base       TEXT NOT NULL DEFAULT '',
	branch     TEXT NOT NULL DEFAULT '',
	status     TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	verdict    TEXT NOT NULL DEFAULT '',
	budgets    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(budgets)),
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX tasks_by_created ON tasks (created_at);
CREATE INDEX tasks_by_repo ON tasks (repo, created_at);

-- The fence counter outlives lease rows: Release deletes the lease, and the
-- next acquisition must still get a larger fence than any before it.
CREATE TABLE fences (
	task_id TEXT PRIMARY KEY REFERENCES tasks (id),
	fence   INTEGER NOT NULL CHECK (fence > 0)
) STRICT;

CREATE TABLE leases (
	task_id    TEXT PRIMARY KEY REFERENCES tasks (id),
	owner      TEXT NOT NULL,
	pid        INTEGER NOT NULL,
	boot_id    TEXT NOT NULL,
	start_time INTEGER NOT NULL DEFAULT 0, -- holder's process start, clock ticks after boot; 0 unknown
	fence      INTEGER NOT NULL,
	heartbeat  TEXT NOT NULL,
	expires    TEXT NOT NULL
) STRICT;

CREATE TABLE attempts (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	task_id     TEXT NOT NULL REFERENCES tasks (id),
	number      INTEGER NOT NULL,
	fence       INTEGER NOT NULL,
	status      TEXT NOT NULL,
	verdict     TEXT NOT NULL DEFAULT '',
	note        TEXT NOT NULL DEFAULT '',
	started_at  TEXT NOT NULL,
	finished_at TEXT,
	UNIQUE (task_id, number)
) STRICT;

CREATE TABLE events (
	seq     INTEGER PRIMARY KEY AUTOINCREMENT,
	task_id TEXT NOT NULL REFERENCES tasks (id),
	attempt INTEGER,
	fence   INTEGER,
	kind    TEXT NOT NULL,
	data    TEXT CHECK (data IS NULL OR json_valid(data)),
	at      TEXT NOT NULL
) STRICT;
CREATE INDEX events_by_task ON events (task_id, seq);

-- task_id is a soft reference: a bcode check outside any task has none, and
-- a gate run must be recorded even if its task row is somehow missing.
CREATE TABLE verification_runs (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	task_id     TEXT,
	attempt     INTEGER,
	repo        TEXT NOT NULL,
	base        TEXT NOT NULL,
	head        TEXT NOT NULL,
	verdict     TEXT NOT NULL,
	report      TEXT CHECK (report IS NULL OR json_valid(report)),
	duration_ms INTEGER NOT NULL DEFAULT 0,
	at          TEXT NOT NULL
) STRICT;
CREATE INDEX verification_runs_by_repo ON verification_runs (repo, id);

CREATE TABLE model_calls (
	id                INTEGER PRIMARY KEY AUTOINCREMENT,
	task_id           TEXT NOT NULL REFERENCES tasks (id),
	attempt           INTEGER,
	endpoint          TEXT NOT NULL,
	model             TEXT NOT NULL,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	duration_ms       INTEGER NOT NULL DEFAULT 0,
	timings           TEXT CHECK (timings IS NULL OR json_valid(timings)),
	error             TEXT NOT NULL DEFAULT '',
	at                TEXT NOT NULL
) STRICT;
CREATE INDEX model_calls_by_task ON model_calls (task_id, id);
`,
	`
-- The holder's host name: a pid is judged only on the same boot id and host.
ALTER TABLE leases ADD COLUMN host TEXT NOT NULL DEFAULT '';

-- How many model sessions an endpoint (a llama-server) serves at once.
CREATE TABLE endpoints (
	endpoint TEXT PRIMARY KEY,
	max_sessions INTEGER NOT NULL CHECK (max_sessions > 0)
) STRICT;

-- A session slot is held by a lease: it counts only while that lease row
-- still has this owner and fence and has not expired.
CREATE TABLE endpoint_sessions (
	endpoint TEXT NOT NULL,
	task_id  TEXT NOT NULL REFERENCES tasks (id),
	owner    TEXT NOT NULL,
	fence    INTEGER NOT NULL,
	since    TEXT NOT NULL,
	PRIMARY KEY (endpoint, task_id)
) STRICT;
CREATE INDEX tasks_by_status ON tasks (status, created_at);
`,
	`
-- A task's gate runs (TaskVerifications), without reading its repository's.
CREATE INDEX verification_runs_by_task ON verification_runs (task_id, id);
`,
	`
-- The claim journal (journal.go): a hash chain, one row per entry. seq is
-- assigned by the appender (the last seq + 1) under the write lock, so it
-- has no gaps; task_id is a soft reference, like verification_runs'. The
-- payload is kept as the exact text its digest was taken of.
CREATE TABLE claims (
	seq            INTEGER PRIMARY KEY CHECK (seq > 0),
	at             TEXT NOT NULL,
	kind           TEXT NOT NULL,
	task_id        TEXT NOT NULL,
	payload        TEXT NOT NULL,
	payload_digest TEXT NOT NULL,
	prev_hash      TEXT NOT NULL,
	hash           TEXT NOT NULL
) STRICT;
`,
	`
-- A task's reproduction (--reproduce): the command, the tests it selects,
-- and once reproduced the pinned failing tests with their files' hashes.
CREATE TABLE task_oracles (
	task_id   TEXT PRIMARY KEY REFERENCES tasks (id),
	oracle    TEXT NOT NULL CHECK (json_valid(oracle)),
	pinned    INTEGER NOT NULL DEFAULT 0,
	updated_at TEXT NOT NULL
) STRICT;
`,
	`
-- The untouched bases' suite results the gate reuses (verify.BaseResults):
-- an opaque value under the key of everything that decides it. A Put
-- prunes the oldest rows, by stored_at.
CREATE TABLE base_results (
	key       TEXT PRIMARY KEY,
	data      BLOB NOT NULL,
	stored_at TEXT NOT NULL
) STRICT;
CREATE INDEX base_results_by_age ON base_results (stored_at);
`,
}
