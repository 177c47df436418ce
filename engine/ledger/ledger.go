// Package ledger stores bcode's domain (engine.Task, Attempt, Lease, Event,
// VerificationRun, ModelCall) in one embedded SQLite file.
//
// The file is opened in WAL mode with synchronous=FULL, so a transaction that
// has committed survives a crash of the process (and, on a filesystem that
// honours fsync, of the machine). Writes go through exactly one connection
// and start with BEGIN IMMEDIATE: a transaction that reads and then writes
// holds the write lock from its first statement, so two runners in two
// processes cannot both read "the lease is free" and both take it. Reads go
// through a separate pool of query_only connections and see a consistent
// snapshot without blocking the writer.
//
// Every write made on behalf of a task's runner is fenced: it names the
// lease it holds, and the same transaction checks that the lease row still
// has that owner and fence. A runner that was taken over (it stalled past
// its TTL, or its machine rebooted) gets engine.ErrFenced and writes nothing.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Ledger is an open ledger file. It is safe for concurrent use; several
// Ledgers (in one process or many) may open the same file.
type Ledger struct {
	path   string
	writer *sql.DB // exactly one connection: SetMaxOpenConns(1)
	reader *sql.DB // query_only connections
	opts   options

	closeOnce sync.Once
	closeErr  error
}

type options struct {
	sets  []migrationSet
	alive func(pid int) bool
	now   func() time.Time
}

// Option configures Open.
type Option func(*options)

// WithMigrations registers an extra, independently versioned set of
// migrations, e.g. another package's tables. Each step is one SQL script
// (it may hold several statements); steps apply in order, each once, and
// re-opening the ledger applies only the steps it has not seen. The set name
// "ledger" is the core schema's and cannot be registered.
func WithMigrations(set string, steps []string) Option {
	return func(o *options) {
		o.sets = append(o.sets, migrationSet{name: set, steps: append([]string(nil), steps...)})
	}
}

// WithAlive replaces how Acquire decides whether a lease holder's process
// on this machine (same boot id) still runs. The default looks at
// /proc/<pid> (a zombie counts as dead) and falls back to kill(pid, 0).
// When the holder recorded its process start time, a live pid whose start
// time differs is a reused pid and counts as dead either way.
func WithAlive(alive func(pid int) bool) Option {
	return func(o *options) { o.alive = alive }
}

// WithClock replaces the wall clock used for lease expiry and for the
// timestamps the ledger fills in. Tests use it to step over a TTL.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// readers is the size of the read pool: enough for a server answering a few
// editors at once, small enough that idle connections cost nothing.
const readers = 4

// Open opens (creating if needed) the ledger at path and brings its schema
// up to date. The directory is created 0700 if it does not exist.
func Open(ctx context.Context, path string, opts ...Option) (*Ledger, error) {
	if path == "" {
		return nil, errors.New("ledger path is empty (set BCODE_STATE or --state)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger path %q: %w", path, err)
	}
	o := options{alive: processAlive, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if err := validateSets(o.sets); err != nil {
		return nil, fmt.Errorf("ledger at %s: %w", abs, err)
	}
	if err := checkStateDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	if err := checkFile(abs); err != nil {
		return nil, err
	}
	// Before any connection that could write: see identify.
	if err := identify(ctx, abs); err != nil {
		return nil, err
	}

	l := &Ledger{path: abs, opts: o}
	l.writer, err = sql.Open("sqlite", dsn(abs, writerParams, "immediate"))
	if err != nil {
		return nil, fmt.Errorf("ledger at %s: %w", abs, err)
	}
	// One writer: SQLite allows one writing transaction at a time anyway,
	// and queueing writers on the pool (rather than on the file lock) keeps
	// busy waits for contention between processes.
	l.writer.SetMaxOpenConns(1)
	l.writer.SetMaxIdleConns(1)
	l.writer.SetConnMaxLifetime(0)
	l.writer.SetConnMaxIdleTime(0)

	if err := l.writer.PingContext(ctx); err != nil {
		l.writer.Close()
		return nil, l.openError(err)
	}
	if err := l.checkJournal(ctx); err != nil {
		l.writer.Close()
		return nil, err
	}
	if err := l.migrate(ctx); err != nil {
		l.writer.Close()
		return nil, err
	}

	l.reader, err = sql.Open("sqlite", dsn(abs, readerParams, ""))
	if err != nil {
		l.writer.Close()
		return nil, fmt.Errorf("ledger at %s: %w", abs, err)
	}
	l.reader.SetMaxOpenConns(readers)
	l.reader.SetMaxIdleConns(readers)
	if err := l.reader.PingContext(ctx); err != nil {
		l.Close()
		return nil, l.openError(err)
	}
	return l, nil
}

var (
	writerParams = []string{
		"busy_timeout(10000)",
		"foreign_keys(1)",
		"journal_mode(WAL)",
		"synchronous(FULL)",
	}
	// Readers never write, so synchronous does not matter for them, and
	// journal_mode is a property of the file that the writer has set.
	readerParams = []string{
		"busy_timeout(10000)",
		"foreign_keys(1)",
		"query_only(1)",
	}
)

// dsn builds a file: URI (so a path with '?' or '#' in it survives) with the
// driver's _pragma parameters, and BEGIN IMMEDIATE for the writer.
func dsn(path string, pragmas []string, txlock string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if txlock != "" {
		q.Set("_txlock", txlock)
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	return u.String()
}

// checkStateDir makes sure the directory exists and that this process can
// create files in it: SQLite needs to create the -wal and -shm files next to
// the database, and failing later, mid-transaction, is far less clear.
func checkStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir %s is not writable: %w (set BCODE_STATE or --state)", dir, err)
	}
	f, err := os.CreateTemp(dir, ".bcode-probe-*")
	if err != nil {
		return fmt.Errorf("state dir %s is not writable: %w (set BCODE_STATE or --state)", dir, err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

// checkFile reports a ledger path that exists but cannot be a ledger file.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger at %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("ledger at %s is a directory, not a database file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("ledger at %s cannot be opened for reading and writing: %w (fix its permissions, or set BCODE_STATE or --state)", path, err)
	}
	return f.Close()
}

// openError turns the driver's errors on first contact into ones that say
// what is wrong with the file.
func (l *Ledger) openError(err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
		return explain(l.path, err)
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return fmt.Errorf("ledger at %s cannot be opened: %v (check its permissions, or set BCODE_STATE or --state)", l.path, err)
	}
	return fmt.Errorf("ledger at %s: %w", l.path, err)
}

// checkJournal fails when WAL could not be enabled (SQLite silently keeps
// the old mode, e.g. on filesystems without shared memory): without WAL the
// readers would block the writer and the durability argument changes.
func (l *Ledger) checkJournal(ctx context.Context) error {
	var mode string
	if err := l.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return l.openError(err)
	}
	if mode != "wal" {
		return fmt.Errorf("ledger at %s: journal mode is %q, not wal (is the state dir on a network filesystem? set BCODE_STATE or --state to a local disk)", l.path, mode)
	}
	return nil
}

// wrap names the ledger and the operation in err, or says what to do when
// err is about the file itself (see explain).
func (l *Ledger) wrap(op string, err error) error {
	if e := explain(l.path, err); e != err {
		return e
	}
	return fmt.Errorf("ledger at %s: %s: %w", l.path, op, err)
}

// Close closes the ledger. Calling it again returns the first result.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		if l.reader != nil {
			errs = append(errs, l.reader.Close())
		}
		// The writer last: closing the last connection checkpoints the WAL.
		errs = append(errs, l.writer.Close())
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// Path is the ledger file's absolute path.
func (l *Ledger) Path() string { return l.path }

// busyPatience bounds how long Write keeps retrying BEGIN IMMEDIATE when
// another process holds the write lock past the driver's busy timeout.
const busyPatience = 60 * time.Second

// Write runs fn in a BEGIN IMMEDIATE transaction on the one writer
// connection and commits it when fn returns nil. When another process holds
// the write lock longer than the busy timeout, BEGIN is retried with jittered
// backoff for up to a minute (or until ctx ends); fn itself runs at most
// once. fn must use only tx, and must not call Write (the single writer
// connection is taken).
func (l *Ledger) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := l.beginWrite(ctx)
	if err != nil {
		return err
	}
	// Also on a panic in fn: the one writer connection must not stay
	// inside a transaction. After Commit this is a no-op.
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return explain(l.path, err)
	}
	if err := tx.Commit(); err != nil {
		return l.wrap("commit", err)
	}
	return nil
}

func (l *Ledger) beginWrite(ctx context.Context) (*sql.Tx, error) {
	deadline := time.Now().Add(busyPatience)
	backoff := 10 * time.Millisecond
	for {
		tx, err := l.writer.BeginTx(ctx, nil)
		if err == nil {
			return tx, nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			if isBusy(err) {
				return nil, fmt.Errorf("%w: ledger at %s is locked by another bcode process for over %s: %w", ErrUnavailable, l.path, busyPatience, err)
			}
			return nil, l.wrap("begin", err)
		}
		sleep := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// Read runs fn in a read-only transaction on the read pool: every query in
// fn sees the same snapshot, and the writer is not blocked meanwhile.
// A read that finds the file busy past the driver's busy timeout (another
// process recovering the WAL, a checkpoint holding its lock) runs again
// with backoff, for up to busyPatience.
func (l *Ledger) Read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	deadline := time.Now().Add(busyPatience)
	backoff := 10 * time.Millisecond
	for {
		err := l.readOnce(ctx, fn)
		if !isBusy(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff/2 + rand.N(backoff)):
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (l *Ledger) readOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := l.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return l.wrap("begin read", err)
	}
	defer tx.Rollback()
	return explain(l.path, fn(tx))
}

// IntegrityCheck runs PRAGMA integrity_check and returns nil only when
// SQLite answers "ok"; otherwise the error lists what it found.
func (l *Ledger) IntegrityCheck(ctx context.Context) error {
	return l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "PRAGMA integrity_check")
		if err != nil {
			return err
		}
		defer rows.Close()
		var problems []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			problems = append(problems, s)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(problems) == 1 && problems[0] == "ok" {
			return nil
		}
		return fmt.Errorf("ledger at %s failed integrity_check: %v", l.path, problems)
	})
}

// sqliteCode is the primary SQLite result code inside err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}
