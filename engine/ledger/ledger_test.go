package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// fakeClock is a wall clock a test steps by hand, shared by several Ledgers.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openAt(t testing.TB, path string, opts ...Option) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func openTemp(t testing.TB, opts ...Option) *Ledger {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "ledger.db"), opts...)
}

// migrationRows lists schema_migrations as "set/version" in order.
func migrationRows(t *testing.T, l *Ledger) ([]string, []string) {
	t.Helper()
	var rows, applied []string
	err := l.Read(context.Background(), func(tx *sql.Tx) error {
		r, err := tx.Query(`SELECT "set", version, applied_at FROM schema_migrations ORDER BY "set", version`)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var set, at string
			var v int
			if err := r.Scan(&set, &v, &at); err != nil {
				return err
			}
			rows = append(rows, fmt.Sprintf("%s/%d", set, v))
			applied = append(applied, at)
		}
		return r.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, applied
}

// coreRows is the core set's rows in schema_migrations, as migrationRows
// prints them: ledger/1 to ledger/N, N the steps there are.
func coreRows() string {
	var rows []string
	for v := range len(coreMigrations) {
		rows = append(rows, fmt.Sprintf("ledger/%d", v+1))
	}
	return strings.Join(rows, " ")
}

func TestMigrationsApplyOnceAndReopenIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	clock := newFakeClock()
	l := openAt(t, path, WithClock(clock.now))
	first, firstAt := migrationRows(t, l)
	if want := "[" + coreRows() + "]"; fmt.Sprint(first) != want {
		t.Fatalf("migrations after first open: %v, want %v", first, want)
	}
	for _, table := range []string{"tasks", "attempts", "leases", "fences", "events", "verification_runs", "model_calls"} {
		var n int
		err := l.Read(context.Background(), func(tx *sql.Tx) error {
			return tx.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&n)
		})
		if err != nil || n != 1 {
			t.Errorf("table %s: count %d, err %v", table, n, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	clock.advance(time.Hour)
	for range 2 {
		l2 := openAt(t, path, WithClock(clock.now))
		again, againAt := migrationRows(t, l2)
		if fmt.Sprint(again) != fmt.Sprint(first) || fmt.Sprint(againAt) != fmt.Sprint(firstAt) {
			t.Errorf("re-open changed schema_migrations: %v %v, was %v %v", again, againAt, first, firstAt)
		}
		l2.Close()
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openAt(t, path)
	err := l.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO schema_migrations ("set", version, applied_at) VALUES ('ledger', 7, 'x')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()

	_, err = Open(context.Background(), path)
	want := fmt.Sprintf("ledger at %s was written by a newer bcode (schema 7 > %d)", path, len(coreMigrations))
	if err == nil || err.Error() != want {
		t.Fatalf("Open of a newer ledger: %v\nwant: %s", err, want)
	}
}

func TestExtraMigrationSet(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	step1 := `CREATE TABLE extra_a (k TEXT PRIMARY KEY, v TEXT);
		CREATE TABLE extra_b (k TEXT PRIMARY KEY);
		INSERT INTO extra_b (k) VALUES ('seed');`
	step2 := `ALTER TABLE extra_a ADD COLUMN n INTEGER NOT NULL DEFAULT 0`

	l := openAt(t, path, WithMigrations("extra", []string{step1}))
	if rows, _ := migrationRows(t, l); fmt.Sprint(rows) != "[extra/1 "+coreRows()+"]" {
		t.Fatalf("after the first open: %v", rows)
	}
	l.Close()

	// A second step arrives with a newer binary; the first is not re-run
	// (re-running it would fail: the tables exist).
	l = openAt(t, path, WithMigrations("extra", []string{step1, step2}))
	if rows, _ := migrationRows(t, l); fmt.Sprint(rows) != "[extra/1 extra/2 "+coreRows()+"]" {
		t.Fatalf("after adding a step: %v", rows)
	}
	var seeds, n int
	err := l.Read(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow(`SELECT count(*) FROM extra_b`).Scan(&seeds); err != nil {
			return err
		}
		return tx.QueryRow(`SELECT count(*) FROM pragma_table_info('extra_a') WHERE name = 'n'`).Scan(&n)
	})
	if err != nil || seeds != 1 || n != 1 {
		t.Fatalf("extra tables: seeds %d, column n %d, err %v", seeds, n, err)
	}
	l.Close()

	// Opening without registering the set leaves it alone.
	l = openAt(t, path)
	l.Close()

	// An older binary that knows only step 1 refuses, naming the set.
	_, err = Open(ctx, path, WithMigrations("extra", []string{step1}))
	if err == nil || !strings.Contains(err.Error(), `was written by a newer bcode (schema 2 > 1 of migration set "extra")`) {
		t.Fatalf("older binary opened a newer extra set: %v", err)
	}

	for name, opts := range map[string][]Option{
		"reserved name": {WithMigrations("ledger", []string{step1})},
		"empty name":    {WithMigrations(" ", []string{step1})},
		"twice":         {WithMigrations("x", nil), WithMigrations("x", nil)},
		"empty step":    {WithMigrations("x", []string{"  "})},
	} {
		if _, err := Open(ctx, path, opts...); err == nil || !strings.Contains(err.Error(), "WithMigrations") {
			t.Errorf("%s: Open err %v, want a WithMigrations error", name, err)
		}
	}
}

func TestFailingMigrationLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	_, err := Open(ctx, path, WithMigrations("broken", []string{`CREATE TABLE ok_so_far (x INTEGER)`, `CREATE TABLE oops (`}))
	if err == nil || !strings.Contains(err.Error(), "migration broken/2") {
		t.Fatalf("a broken step: %v", err)
	}
	l := openAt(t, path)
	rows, _ := migrationRows(t, l)
	if fmt.Sprint(rows) != "["+coreRows()+"]" {
		t.Errorf("after a failed open then a clean one: %v", rows)
	}
	var n int
	l.Read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'ok_so_far'`).Scan(&n)
	})
	if n != 0 {
		t.Error("step 1 of the failed set survived its rollback")
	}
}

func TestPragmasInEffect(t *testing.T) {
	ctx := context.Background()
	l := openTemp(t)
	check := func(where string, run func(context.Context, func(*sql.Tx) error) error, pragma string, want int) {
		t.Helper()
		var got int
		err := run(ctx, func(tx *sql.Tx) error { return tx.QueryRow("PRAGMA " + pragma).Scan(&got) })
		if err != nil || got != want {
			t.Errorf("%s PRAGMA %s = %d (err %v), want %d", where, pragma, got, err, want)
		}
	}
	var mode string
	if err := l.Read(ctx, func(tx *sql.Tx) error { return tx.QueryRow("PRAGMA journal_mode").Scan(&mode) }); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (err %v), want wal", mode, err)
	}
	check("writer", l.Write, "synchronous", 2) // FULL
	check("writer", l.Write, "busy_timeout", 10000)
	check("writer", l.Write, "foreign_keys", 1)
	check("writer", l.Write, "query_only", 0)
	check("reader", l.Read, "query_only", 1)
	check("reader", l.Read, "foreign_keys", 1)

	// The writer's transactions are BEGIN IMMEDIATE: one holds the write
	// lock before writing anything, so a second connection cannot even
	// begin. A deferred BEGIN would succeed here.
	other, err := sql.Open("sqlite", dsn(l.Path(), []string{"busy_timeout(0)"}, "immediate"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = l.Write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil {
			return err
		}
		otx, err := other.BeginTx(ctx, nil)
		if err == nil {
			otx.Rollback()
			return errors.New("a second writer began while a read-only-so-far Write transaction was open")
		}
		if !isBusy(err) {
			return fmt.Errorf("second writer: %v, want SQLITE_BUSY", err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}

	// Reads cannot write.
	err = l.Read(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO schema_migrations ("set", version, applied_at) VALUES ('x', 1, 'y')`)
		return err
	})
	if err == nil {
		t.Error("a write through Read succeeded")
	}
	if err := l.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()

	t.Run("state dir under a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "plain")
		os.WriteFile(file, []byte("x"), 0o600)
		_, err := Open(ctx, filepath.Join(file, "state", "ledger.db"))
		want := fmt.Sprintf("state dir %s is not writable: ", filepath.Join(file, "state"))
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "(set BCODE_STATE or --state)") {
			t.Fatalf("err %v, want %q...(set BCODE_STATE or --state)", err, want)
		}
	})

	t.Run("read-only state dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ro")
		os.Mkdir(dir, 0o500)
		if os.Geteuid() == 0 {
			// Permission bits do not bind root; /proc refuses new files to everyone.
			if _, err := os.Stat("/proc/self"); err != nil {
				t.Skip("running as root without /proc: no directory is unwritable; run as a normal user")
			}
			dir = "/proc/self"
		}
		_, err := Open(ctx, filepath.Join(dir, "ledger.db"))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("state dir %s is not writable", dir)) {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("corrupt file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 400)), 0o600)
		_, err := Open(ctx, path)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("ledger at %s is not a SQLite database", path)) {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("another program's database", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "other.db")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE photos (id INTEGER)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = Open(ctx, path)
		if err == nil || !strings.Contains(err.Error(), "is a SQLite database of another program") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("directory as file", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Open(ctx, dir)
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("empty path", func(t *testing.T) {
		if _, err := Open(ctx, ""); err == nil {
			t.Fatal("Open(\"\") succeeded")
		}
	})
}

func TestStateDirPrecedence(t *testing.T) {
	base := t.TempDir()
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("BCODE_STATE", "")

	check := func(want string) {
		t.Helper()
		p, err := DefaultPath()
		if err != nil {
			t.Fatal(err)
		}
		if p != filepath.Join(want, "ledger.db") {
			t.Errorf("DefaultPath %s, want %s/ledger.db", p, want)
		}
		fi, err := os.Stat(want)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("state dir %s: %v %v, want a 0700 directory", want, fi, err)
		}
	}
	check(filepath.Join(base, "home", ".local", "state", "bcode"))

	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	check(filepath.Join(base, "home", ".local", "state", "bcode"))

	t.Setenv("XDG_STATE_HOME", filepath.Join(base, "xdg"))
	check(filepath.Join(base, "xdg", "bcode"))

	t.Setenv("BCODE_STATE", filepath.Join(base, "explicit"))
	check(filepath.Join(base, "explicit"))

	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	t.Setenv("BCODE_STATE", filepath.Join(file, "sub"))
	if _, err := StateDir(); err == nil || !strings.Contains(err.Error(), "(set BCODE_STATE or --state)") {
		t.Errorf("StateDir under a file: %v", err)
	}
}

func TestPathWithURICharacters(t *testing.T) {
	// The DSN is a file: URI; a path with ?, # and % must still name the file.
	dir := filepath.Join(t.TempDir(), "a?b#c%20d e")
	l := openAt(t, filepath.Join(dir, "ledger.db"))
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, "ledger.db")); err != nil {
		t.Fatalf("the ledger is not where asked: %v", err)
	}
}

func TestWriteRollsBackOnErrorAndPanic(t *testing.T) {
	ctx := context.Background()
	l := openTemp(t)
	insert := func(tx *sql.Tx, v int) error {
		_, err := tx.Exec(`INSERT INTO schema_migrations ("set", version, applied_at) VALUES ('probe', ?, 'x')`, v)
		return err
	}
	boom := errors.New("boom")
	if err := l.Write(ctx, func(tx *sql.Tx) error {
		if err := insert(tx, 1); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Write returned %v, want fn's error", err)
	}
	func() {
		defer func() { recover() }()
		l.Write(ctx, func(tx *sql.Tx) error {
			insert(tx, 2)
			panic("fn panics mid-transaction")
		})
	}()
	// The single writer connection is free again, and neither row stayed.
	if err := l.Write(ctx, func(tx *sql.Tx) error { return insert(tx, 3) }); err != nil {
		t.Fatalf("Write after a failed and a panicking one: %v", err)
	}
	var versions []int
	l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.Query(`SELECT version FROM schema_migrations WHERE "set" = 'probe' ORDER BY version`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v int
			rows.Scan(&v)
			versions = append(versions, v)
		}
		return rows.Err()
	})
	if fmt.Sprint(versions) != "[3]" {
		t.Errorf("rows after rollback: %v, want [3]", versions)
	}
}

// TestUpgradeAddsTheTaskQueriesIndex: a ledger written before
// verification_runs_by_task (schema 2) gets it on open, keeps its runs, and
// the per-task queries read through indexes, not whole tables.
func TestUpgradeAddsTheTaskQueriesIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openAt(t, path)
	tk := &engine.Task{Repo: "/r", Goal: "g", Base: "b"}
	if err := l.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordVerification(ctx, &engine.VerificationRun{TaskID: tk.ID, Repo: "/r", Base: "b", Head: "h", Verdict: "verified"}); err != nil {
		t.Fatal(err)
	}
	// Turn it back into a schema-2 ledger (without the index and the
	// journal and the oracles, which came later).
	err := l.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`DROP INDEX verification_runs_by_task; DROP TABLE claims; DROP TABLE task_oracles; DROP TABLE base_results; DELETE FROM schema_migrations WHERE "set" = 'ledger' AND version >= 3`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()

	l = openAt(t, path)
	if rows, _ := migrationRows(t, l); fmt.Sprint(rows) != "["+coreRows()+"]" {
		t.Fatalf("after the upgrade: %v", rows)
	}
	runs, err := l.TaskVerifications(ctx, tk.ID, 1)
	if err != nil || len(runs) != 1 || runs[0].Head != "h" {
		t.Fatalf("TaskVerifications after the upgrade: %+v, %v", runs, err)
	}
	plan := func(q string, args ...any) string {
		t.Helper()
		var steps []string
		err := l.Read(ctx, func(tx *sql.Tx) error {
			r, err := tx.Query(`EXPLAIN QUERY PLAN `+q, args...)
			if err != nil {
				return err
			}
			defer r.Close()
			for r.Next() {
				var id, parent, unused int
				var detail string
				if err := r.Scan(&id, &parent, &unused, &detail); err != nil {
					return err
				}
				steps = append(steps, detail)
			}
			return r.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(steps, "; ")
	}
	if p := plan(`SELECT id FROM verification_runs WHERE task_id = ? ORDER BY id DESC LIMIT 1`, tk.ID); !strings.Contains(p, "verification_runs_by_task") {
		t.Errorf("a task's runs are not read through verification_runs_by_task: %s", p)
	}
	if p := plan(`SELECT e.seq FROM tasks t JOIN events e ON e.seq = (SELECT max(seq) FROM events WHERE task_id = t.id) WHERE t.repo = ?`, "/r"); !strings.Contains(p, "events_by_task") || !strings.Contains(p, "tasks_by_repo") {
		t.Errorf("the newest events are not read through tasks_by_repo and events_by_task: %s", p)
	}
}
