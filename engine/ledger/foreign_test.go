package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/internal/testenv"
)

// dirDigest is every file in dir with the sha256 of its content, so a test
// sees both a changed database and a -wal, -shm or -journal file left next
// to it.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		lines = append(lines, e.Name()+" "+hex.EncodeToString(sum[:]))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func makeDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestForeignDatabaseUntouched opens bcode's ledger on databases of other
// programs and checks that each is refused with ErrForeign and that the
// directory holding it is byte for byte what it was (sha256 of every file):
// no journal-mode switch, no migration table, no -wal or -shm left behind.
func TestForeignDatabaseUntouched(t *testing.T) {
	cases := []struct {
		name  string
		stmts []string
		want  string
	}{
		{"plain tables", []string{`CREATE TABLE photos (id INTEGER, name TEXT)`, `INSERT INTO photos VALUES (1, 'a')`},
			"is a SQLite database of another program (it has 1 schema objects and no schema_migrations table)"},
		{"its own schema_migrations", []string{
			`CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, dirty INTEGER)`,
			`INSERT INTO schema_migrations VALUES ('20240101000000', 0)`,
			`CREATE TABLE users (id INTEGER)`},
			"is a SQLite database of another program (its schema_migrations table is not bcode's)"},
		{"schema_migrations shaped like bcode's, other sets", []string{
			`CREATE TABLE schema_migrations ("set" TEXT, version INTEGER, applied_at TEXT)`,
			`INSERT INTO schema_migrations VALUES ('billing', 1, 'x')`},
			"its schema_migrations table is not bcode's"},
		{"another application_id", []string{`PRAGMA application_id = 1234`, `CREATE TABLE t (x)`},
			"is a SQLite database of another program (application_id 0x4d2)"},
		{"in WAL mode", []string{`PRAGMA journal_mode = WAL`, `CREATE TABLE t (x)`, `INSERT INTO t VALUES (1)`},
			"is a SQLite database of another program (it has 1 schema objects"},
		{"rollback journal, delete mode", []string{`PRAGMA journal_mode = DELETE`, `CREATE TABLE t (x)`},
			"no schema_migrations table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ledger.db")
			makeDB(t, path, c.stmts...)
			before := dirDigest(t, dir)
			_, err := Open(context.Background(), path)
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v\nwant ErrForeign and %q", err, c.want)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "set BCODE_STATE or --state") {
				t.Errorf("the error names no file or no way out: %v", err)
			}
			if after := dirDigest(t, dir); after != before {
				t.Fatalf("the foreign database changed:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}

	t.Run("not SQLite at all", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "ledger.db")
		os.WriteFile(path, []byte(strings.Repeat("notes of another program\n", 50)), 0o600)
		before := dirDigest(t, dir)
		_, err := Open(context.Background(), path)
		if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "is not a SQLite database") {
			t.Fatalf("Open: %v", err)
		}
		if after := dirDigest(t, dir); after != before {
			t.Fatal("the file changed")
		}
	})
}

// TestApplicationID: a new ledger carries bcode's application_id; one made
// before it (the id zeroed by hand, as older bcode left it) is recognised by
// its schema and gets the id; an empty SQLite file becomes a ledger.
func TestApplicationID(t *testing.T) {
	ctx := context.Background()
	readID := func(path string) uint32 {
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 72 {
			t.Fatalf("read %s: %v", path, err)
		}
		return uint32(b[68])<<24 | uint32(b[69])<<16 | uint32(b[70])<<8 | uint32(b[71])
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTask(ctx, &engine.Task{Repo: "/r", Goal: "g"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got := readID(path); got != applicationID {
		t.Fatalf("application_id %#x, want %#x", got, applicationID)
	}

	makeDB(t, path, `PRAGMA application_id = 0`)
	if got := readID(path); got != 0 {
		t.Fatalf("could not zero the id: %#x", got)
	}
	l, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("a ledger without the id (made by an older bcode) is refused: %v", err)
	}
	tasks, err := l.Tasks(ctx, "")
	l.Close()
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	if got := readID(path); got != applicationID {
		t.Fatalf("older ledger not marked: %#x", got)
	}

	empty := filepath.Join(t.TempDir(), "ledger.db")
	os.WriteFile(empty, nil, 0o600)
	l, err = Open(ctx, empty)
	if err != nil {
		t.Fatalf("empty file: %v", err)
	}
	l.Close()
	if got := readID(empty); got != applicationID {
		t.Fatalf("empty file not marked: %#x", got)
	}
}

// TestDamagedPageMessage overwrites one page of a real ledger in the middle
// of its tasks table and checks the message names the file and the way out.
func TestDamagedPageMessage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := l.CreateTask(ctx, &engine.Task{Repo: "/r", Goal: fmt.Sprintf("goal %d %s", i, strings.Repeat("x", 200))}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	fi, _ := os.Stat(path)
	const page = 4096
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every page past the schema's, half of them: whichever holds the
	// tasks' b-tree, reading them all meets garbage.
	for off := int64(3 * page); off+page <= fi.Size(); off += 2 * page {
		f.WriteAt([]byte(strings.Repeat("\xff", page)), off)
	}
	f.Close()

	l, err = Open(ctx, path)
	if err == nil {
		_, err = l.Tasks(ctx, "")
		if err == nil {
			err = l.IntegrityCheck(ctx)
		}
		l.Close()
	}
	want := []string{
		"ledger at " + path + " is damaged: ",
		"database disk image is malformed",
		"sqlite3 " + path + " '.recover'",
		"or move it aside and bcode starts a new ledger",
	}
	if err == nil {
		t.Fatal("a damaged ledger read without error")
	}
	t.Logf("%v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
}

// TestDiskFullMessage puts a ledger on a 1 MiB tmpfs, fills the filesystem
// and checks both ways SQLite reports it (SQLITE_FULL on a write, "disk I/O
// error (4874)" when the -shm file cannot be made on open) come out as "the
// disk is full", naming the file and what to do. It needs mount(2) (root or
// CAP_SYS_ADMIN).
func TestDiskFullMessage(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		testenv.Missing(t, "mounting a small tmpfs needs root or CAP_SYS_ADMIN: "+err.Error())
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	ctx := context.Background()
	path := filepath.Join(mnt, "ledger.db")
	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	fill := func() {
		// dd stops at ENOSPC: the filesystem is then full to the block.
		exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(mnt, "filler"), "bs=4k").Run()
	}
	fill()
	var werr error
	for i := 0; i < 200 && werr == nil; i++ {
		werr = l.CreateTask(ctx, &engine.Task{Repo: "/r", Goal: strings.Repeat("g", 4000)})
	}
	l.Close()
	wantFull := func(what string, err error) {
		t.Helper()
		t.Logf("%s: %v", what, err)
		for _, w := range []string{"ledger at " + path + ": the disk is full: ", "free space on the filesystem holding " + mnt, "set BCODE_STATE or --state"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: message %v lacks %q", what, err, w)
			}
		}
	}
	wantFull("write", werr)

	// The -shm and -wal files are gone after a clean close; re-opening
	// on the full disk must make them.
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	fill()
	_, err = Open(ctx, path)
	wantFull("open", err)
}
