package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/fake"
)

// ledgerHandles counts this process's open files that are the ledger at
// path (the database itself, not its -wal or -shm).
func ledgerHandles(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count open files: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestConnectionClosesItsLedger: each connection's server opens the task
// ledger when asked about tasks; when the connection ends, the handle is
// closed, so a bcode-ls serving connection after connection (--listen)
// does not leak one per connection.
func TestConnectionClosesItsLedger(t *testing.T) {
	t.Setenv("BCODE_STATE", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	// The test's own handle is closed before counting: SQLite keeps a
	// closed connection's file open while another connection of the same
	// process holds locks on it, and would hide the difference.
	led := openLedger(t, ctx)
	seedTask(t, ctx, led, dir, "a task to list", engine.TaskQueued)
	path := led.Path()
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	before := ledgerHandles(t, path)
	const connections = 4
	for i := 0; i < connections; i++ {
		t.Run("connection", func(t *testing.T) {
			e := fake.Connect(t, dir, server.Options{NoWatch: true, NoEvidenceOnOpen: true, NoEvidenceOnSave: true})
			if _, err := e.Initialize(ctx, fake.Config{}); err != nil {
				t.Fatal(err)
			}
			var res struct{ Tasks []json.RawMessage }
			if err := e.Conn.Call(ctx, server.MethodTasks, struct{}{}, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Tasks) != 1 {
				t.Fatalf("bcode/tasks listed %d tasks, want 1", len(res.Tasks))
			}
			if ledgerHandles(t, path) <= before {
				t.Fatal("listing tasks opened no ledger handle: the test would prove nothing")
			}
		}) // fake.Connect's cleanup ends the connection and waits for Serve
	}
	if after := ledgerHandles(t, path); after != before {
		t.Fatalf("%d ledger handles open after %d connections ended, %d before", after, connections, before)
	}
}
