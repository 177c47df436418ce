// Package pgtest gives tests a real, throwaway PostgreSQL database: a
// fresh database per call in one cluster per test binary. The cluster is
// either the one BCODE_TEST_POSTGRES names (a URL of a role that may
// CREATE DATABASE), or one this package starts in a temporary directory
// with the installed initdb and pg_ctl, listening only on a unix socket
// there. Without either the test skips, saying how to get PostgreSQL, or
// fails when BCODE_REQUIRE_ALL=1 (as in CI).
//
// A package using it calls Main from its TestMain, so the cluster it
// started is stopped when the tests end.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names an existing server to use instead of starting one.
const EnvURL = "BCODE_TEST_POSTGRES"

// How is what a skipped test tells the user.
const How = "PostgreSQL is not installed: apt-get install postgresql (Debian/Ubuntu), or set " + EnvURL + "=postgres://user@host/db of a role that may CREATE DATABASE"

var (
	once     sync.Once
	admin    string // URL of the maintenance database
	setupErr error
	stop     func()
	restart  func(down time.Duration) error
	dbs      atomic.Int64
)

// Restart stops the cluster this package started with a fast shutdown
// (every session is terminated with 57P01, as an administrator's restart
// does), keeps it down for down, and starts it again. It skips when the
// cluster is not this package's (BCODE_TEST_POSTGRES).
func Restart(t testing.TB, down time.Duration) {
	t.Helper()
	if restart == nil {
		t.Skip("the PostgreSQL cluster is not this test's to restart (" + EnvURL + " is set)")
	}
	if err := restart(down); err != nil {
		t.Fatalf("restarting PostgreSQL: %v", err)
	}
}

// Main runs the tests and then stops the cluster Main's package started.
func Main(m *testing.M) int {
	code := m.Run()
	if stop != nil {
		stop()
	}
	return code
}

// URL creates a new, empty database and returns its URL. It skips (or
// fails under BCODE_REQUIRE_ALL=1) when there is no PostgreSQL.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { admin, stop, setupErr = setup() })
	if setupErr != nil {
		if errors.Is(setupErr, errMissing) {
			if os.Getenv("BCODE_REQUIRE_ALL") == "1" {
				t.Fatalf("%v and BCODE_REQUIRE_ALL=1: %s", setupErr, How)
			}
			t.Skip(How)
		}
		t.Fatalf("starting a throwaway PostgreSQL: %v", setupErr)
	}
	name := fmt.Sprintf("bcode_t%d_%d", os.Getpid(), dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to the test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	return u.String()
}

var errMissing = errors.New("no PostgreSQL")

func setup() (string, func(), error) {
	if u := os.Getenv(EnvURL); u != "" {
		return u, nil, nil
	}
	bin := findBin()
	if bin == "" {
		return "", nil, fmt.Errorf("%w: no initdb under /usr/lib/postgresql/*/bin or on PATH", errMissing)
	}
	// A unix socket path must stay under ~100 bytes: keep the directory short.
	dir, err := os.MkdirTemp("/tmp", "bcode-pg-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	// initdb and postgres refuse to run as root: run them as the
	// postgres user (or nobody) over a directory that user owns.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		uid, gid, err := unprivileged()
		if err != nil {
			cleanup()
			return "", nil, err
		}
		cred = &syscall.Credential{Uid: uid, Gid: gid}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}
	if err := run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"); err != nil {
		cleanup()
		return "", nil, err
	}
	// No TCP at all. Durability stays as a real server has it (fsync and
	// synchronous_commit on), so what the benchmarks measure is a commit
	// that reached the disk, as SQLite's synchronous=FULL does.
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -c max_connections=200", dir)
	if err := run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		cleanup()
		return "", nil, err
	}
	stopFn := func() {
		run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		cleanup()
	}
	restart = func(down time.Duration) error {
		if err := run("pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
			return err
		}
		time.Sleep(down)
		return run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}, "sslmode": {"disable"}}.Encode()}
	return u.String(), stopFn, nil
}

// findBin is the newest installed PostgreSQL's bin directory.
func findBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// unprivileged is the uid and gid to run the server as when the tests run
// as root: the postgres user the package made, else nobody.
func unprivileged() (uint32, uint32, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		if uid != 0 {
			return uint32(uid), uint32(gid), nil
		}
	}
	return 0, 0, errors.New("running as root and there is no postgres or nobody user to run PostgreSQL as: " + strings.TrimSpace(How))
}
