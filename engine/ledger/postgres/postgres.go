// Package postgres is the ledger on a PostgreSQL database that several
// bcode runners, on one machine or many, share: the same ledger.Store as
// the embedded SQLite file, for a team.
//
// Concurrency rests on row locks, not on one writer. Every write about a
// task starts by locking the task's row (SELECT ... FOR NO KEY UPDATE), so
// the writes of one task are serialised and a lease cannot change between
// the fence check and the write it guards: a fenced write that commits was
// made by the lease's current holder. Claiming the next runnable task uses
// FOR NO KEY UPDATE SKIP LOCKED, so runners claiming at once each get a
// different task without waiting on one another. Fences come from a
// per-task counter that outlives lease rows, so they grow across machines.
//
// Lease expiry is judged by the database's clock, not the runner's: runners
// on machines whose clocks disagree still agree on when a lease has gone
// stale. A holder's pid is only judged by a runner on the same host and
// boot id; any other holder's lease goes stale by its TTL alone.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// Store is an open Postgres ledger. It is safe for concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	where string // the URL without its password, for messages
	now   func() time.Time
	alive func(pid int) bool
}

var _ ledger.Store = (*Store)(nil)

// Option configures Open.
type Option func(*Store)

// WithClock replaces the database's clock (clock_timestamp()) for lease
// expiry and timestamps. Tests use it to step over a TTL.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithAlive replaces how a lease holder's pid on this host and boot is
// judged (see ledger.WithAlive).
func WithAlive(alive func(pid int) bool) Option { return func(s *Store) { s.alive = alive } }

// IsURL reports whether a --ledger value names a Postgres database.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at url (postgres://user@host/db?...) and
// brings its schema up to date.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	s := &Store{where: Redact(rawURL), alive: ledger.ProcessAlive}
	for _, o := range opts {
		o(s)
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w (a Postgres ledger is a URL like postgres://user@host/db)", s.where, err)
	}
	if cfg.MaxConns < 4 {
		cfg.MaxConns = 4
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", s.where, err)
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("ledger %s cannot be reached: %w (is the server running and the URL right? set --ledger or BCODE_LEDGER)", s.where, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// Redact is url with any password replaced by "xxxxx".
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// Close closes every connection.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// String names the database (without the password).
func (s *Store) String() string { return s.where }

// patience bounds the retries of a call that holds no lease (claiming,
// creating a task, reads): the default lease TTL, the time a runner
// tolerates failed heartbeats before its lease could be taken.
const patience = 30 * time.Second

// transient reports an error after which the transaction can simply run
// again: a deadlock or serialisation failure, the server shutting down or
// restarting (57P01 admin shutdown, 57P02, 57P03 starting up), a
// connection exception (class 08), or a connection that broke or could
// not be made (refused, reset, closed).
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "57P01", "57P02", "57P03":
			return true
		}
		return strings.HasPrefix(pe.Code, "08")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// ErrCommitUnknown: the connection broke while COMMIT was on its way, so
// whether the transaction was written is unknown. It is not retried (a
// retry could write twice); the caller sees it.
var ErrCommitUnknown = errors.New("the connection to the ledger broke during COMMIT: whether it was written is unknown")

// write runs fn in a read-committed transaction and commits it when fn
// returns nil. A transient error (see transient) runs the whole
// transaction again, with backoff, for up to patience (fn must only set
// its results through tx).
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.writeUntil(ctx, time.Now().Add(patience), fn)
}

// writeUntil is write retrying until until: a fenced write retries while
// its lease is valid, and gives up when it could no longer be.
func (s *Store) writeUntil(ctx context.Context, until time.Time, fn func(tx pgx.Tx) error) error {
	return s.retry(ctx, until, func() error {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			// The server's answer (a serialisation failure at commit, a
			// FATAL admin shutdown instead of "COMMIT") says it was not
			// written; a connection lost with nothing sent says so too.
			// Anything else is ambiguous.
			var pe *pgconn.PgError
			if errors.As(err, &pe) || pgconn.SafeToRetry(err) || !transient(err) {
				return err
			}
			return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
		}
		return nil
	})
}

// read runs fn in a repeatable-read, read-only transaction: one snapshot.
// A transient error runs it again, for up to patience.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.retry(ctx, time.Now().Add(patience), func() error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
	})
}

// retry runs try until it succeeds, fails for good, ctx ends, or the next
// try would start after until; transient errors back off from 5 ms to 1 s,
// jittered so runners that lost the server together do not return in
// step.
func (s *Store) retry(ctx context.Context, until time.Time, try func() error) error {
	backoff := 5 * time.Millisecond
	for {
		err := try()
		if err == nil || !transient(err) || errors.Is(err, ErrCommitUnknown) || ctx.Err() != nil {
			return s.wrap(err)
		}
		sleep := backoff/2 + rand.N(backoff)
		if time.Now().Add(sleep).After(until) {
			return fmt.Errorf("%w: %w (retried until %s)", ledger.ErrUnavailable, s.wrap(err), until.Format(time.TimeOnly))
		}
		select {
		case <-ctx.Done():
			return s.wrap(err)
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// wrap names the database in errors from the server or the connection,
// and leaves bcode's own (ErrFenced, ErrNotFound, ...) as they are.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("ledger %s: %w", s.where, err)
	}
	return err
}

// clock is now by the store's clock, to the microsecond Postgres keeps.
func (s *Store) clock(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	if s.now != nil {
		return s.now().UTC().Truncate(time.Microsecond), nil
	}
	var t time.Time
	err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t.UTC(), err
}

// lockTask locks the task's row for the rest of tx (see the package
// comment) and returns now; engine.ErrNotFound when there is no such task.
func (s *Store) lockTask(ctx context.Context, tx pgx.Tx, taskID string) (time.Time, error) {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM tasks WHERE id = $1 FOR NO KEY UPDATE`, taskID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("task %q: %w", taskID, engine.ErrNotFound)
	}
	if err != nil {
		return time.Time{}, err
	}
	return s.clock(ctx, tx)
}

// fenced runs fn in a transaction that holds the task's row lock and has
// checked that the lease row still has lease's owner and fence.
// Transient errors are retried for up to patience: past the lease's
// expiry the fence check refuses the write anyway, and the holder's
// heartbeat (which retries only while the lease is valid) stops its work.
func (s *Store) fenced(ctx context.Context, lease engine.Lease, fn func(tx pgx.Tx, now time.Time) error) error {
	return s.fencedUntil(ctx, lease, time.Now().Add(patience), fn)
}

func (s *Store) fencedUntil(ctx context.Context, lease engine.Lease, until time.Time, fn func(tx pgx.Tx, now time.Time) error) error {
	return s.writeUntil(ctx, until, func(tx pgx.Tx) error {
		now, err := s.lockTask(ctx, tx, lease.TaskID)
		if err != nil {
			return err
		}
		if err := checkFence(ctx, tx, lease); err != nil {
			return err
		}
		return fn(tx, now)
	})
}

func checkFence(ctx context.Context, tx pgx.Tx, lease engine.Lease) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM leases WHERE task_id = $1 AND owner = $2 AND fence = $3`,
		lease.TaskID, lease.Owner, lease.Fence).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fencedError(ctx, tx, lease)
	}
	return nil
}

func fencedError(ctx context.Context, tx pgx.Tx, lease engine.Lease) error {
	cur, err := readLease(ctx, tx, lease.TaskID)
	if err != nil {
		return err
	}
	if cur == nil {
		return fmt.Errorf("task %s, fence %d of %s: %w (the lease was released)", lease.TaskID, lease.Fence, lease.Owner, engine.ErrFenced)
	}
	return fmt.Errorf("task %s, fence %d of %s: %w (now fence %d of %s)", lease.TaskID, lease.Fence, lease.Owner,
		engine.ErrFenced, cur.Fence, cur.Owner)
}

// migrationLock is the advisory lock key under which schema changes run,
// so two runners starting at once do not both create the tables.
const migrationLock = 0x62636f64 // "bcod"

// migrate applies the schema steps not yet recorded, in one transaction.
func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bcode_schema_migrations (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("ledger %s: creating bcode_schema_migrations: %w", s.where, err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM bcode_schema_migrations`).Scan(&current); err != nil {
			return err
		}
		if current > len(migrations) {
			return fmt.Errorf("ledger %s was written by a newer bcode (schema %d > %d)", s.where, current, len(migrations))
		}
		for v := current + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("ledger %s: migration %d: %w", s.where, v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO bcode_schema_migrations (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// migrations is the schema, one step per version; never edit a shipped
// step. JSON columns are json (not jsonb) so a value reads back byte for
// byte as it was written, as on SQLite.
var migrations = []string{`
CREATE TABLE tasks (
	id         text PRIMARY KEY,
	repo       text NOT NULL,
	goal       text NOT NULL,
	selection  json,
	criteria   json,
	base       text NOT NULL DEFAULT '',
	branch     text NOT NULL DEFAULT '',
	status     text NOT NULL,
	reason     text NOT NULL DEFAULT '',
	verdict    text NOT NULL DEFAULT '',
	budgets    json NOT NULL DEFAULT '{}',
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	seq        bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX tasks_by_created ON tasks (created_at, seq);
CREATE INDEX tasks_by_repo ON tasks (repo, created_at);
CREATE INDEX tasks_runnable ON tasks (created_at, seq) WHERE status IN ('queued', 'running');

CREATE TABLE fences (
	task_id text PRIMARY KEY REFERENCES tasks (id),
	fence   bigint NOT NULL CHECK (fence > 0)
);

CREATE TABLE leases (
	task_id    text PRIMARY KEY REFERENCES tasks (id),
	owner      text NOT NULL,
	host       text NOT NULL DEFAULT '',
	pid        integer NOT NULL,
	boot_id    text NOT NULL,
	start_time bigint NOT NULL DEFAULT 0,
	fence      bigint NOT NULL,
	heartbeat  timestamptz NOT NULL,
	expires    timestamptz NOT NULL
);

CREATE TABLE attempts (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	task_id     text NOT NULL REFERENCES tasks (id),
	number      integer NOT NULL,
	fence       bigint NOT NULL,
	status      text NOT NULL,
	verdict     text NOT NULL DEFAULT '',
	note        text NOT NULL DEFAULT '',
	started_at  timestamptz NOT NULL,
	finished_at timestamptz,
	UNIQUE (task_id, number)
);

CREATE TABLE events (
	seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	task_id text NOT NULL REFERENCES tasks (id),
	attempt bigint,
	fence   bigint,
	kind    text NOT NULL,
	data    json,
	at      timestamptz NOT NULL
);
CREATE INDEX events_by_task ON events (task_id, seq);

CREATE TABLE verification_runs (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	task_id     text,
	attempt     bigint,
	repo        text NOT NULL,
	base        text NOT NULL,
	head        text NOT NULL,
	verdict     text NOT NULL,
	report      json,
	duration_ms bigint NOT NULL DEFAULT 0,
	at          timestamptz NOT NULL
);
CREATE INDEX verification_runs_by_repo ON verification_runs (repo, id);

CREATE TABLE model_calls (
	id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	task_id           text NOT NULL REFERENCES tasks (id),
	attempt           bigint,
	endpoint          text NOT NULL,
	model             text NOT NULL,
	prompt_tokens     integer NOT NULL DEFAULT 0,
	completion_tokens integer NOT NULL DEFAULT 0,
	duration_ms       bigint NOT NULL DEFAULT 0,
	timings           json,
	error             text NOT NULL DEFAULT '',
	at                timestamptz NOT NULL
);
CREATE INDEX model_calls_by_task ON model_calls (task_id, id);

CREATE TABLE endpoints (
	endpoint     text PRIMARY KEY,
	max_sessions integer NOT NULL CHECK (max_sessions > 0)
);

CREATE TABLE endpoint_sessions (
	endpoint text NOT NULL,
	task_id  text NOT NULL REFERENCES tasks (id),
	owner    text NOT NULL,
	fence    bigint NOT NULL,
	since    timestamptz NOT NULL,
	PRIMARY KEY (endpoint, task_id)
);
`, `
-- A task's gate runs (TaskVerifications), without reading its repository's.
CREATE INDEX verification_runs_by_task ON verification_runs (task_id, id);
`, `
-- The claim journal (engine/ledger's journal.go): a hash chain. seq is
-- assigned by the appender under an advisory lock (journalLock), so it has
-- no gaps; the payload is text, kept byte for byte as its digest was taken.
CREATE TABLE claims (
	seq            bigint PRIMARY KEY CHECK (seq > 0),
	at             timestamptz NOT NULL,
	kind           text NOT NULL,
	task_id        text NOT NULL,
	payload        text NOT NULL,
	payload_digest text NOT NULL,
	prev_hash      text NOT NULL,
	hash           text NOT NULL
);
`, `
-- A task's reproduction (--reproduce): the command, the tests it selects,
-- and once reproduced the pinned failing tests with their files' hashes.
CREATE TABLE task_oracles (
	task_id    text PRIMARY KEY REFERENCES tasks (id),
	oracle     json NOT NULL,
	pinned     boolean NOT NULL DEFAULT false,
	updated_at timestamptz NOT NULL
);
`, `
-- The untouched bases' suite results the gate reuses (verify.BaseResults):
-- an opaque value under the key of everything that decides it. A Put
-- prunes the oldest rows, by stored_at.
CREATE TABLE base_results (
	key       text PRIMARY KEY,
	data      bytea NOT NULL,
	stored_at timestamptz NOT NULL
);
CREATE INDEX base_results_by_age ON base_results (stored_at);
`}
