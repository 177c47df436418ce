package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/ledger/backend"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// TestTaskOperations drives a task's lifecycle through the one engine
// value the surfaces share, on a real repository and SQLite ledger: reads
// never create the ledger, a task is created, listed, read in detail and
// rejected, and without an agent it says it cannot run.
func TestTaskOperations(t *testing.T) {
	ctx := context.Background()
	repo := testrepo.FromTxtar(t, packRepo).Dir
	path := filepath.Join(t.TempDir(), "state", "ledger.db")
	eng := app.Open(app.Options{LedgerPath: path, By: "tester"})
	t.Cleanup(func() { eng.Close() })

	if ts, err := eng.ListTasks(ctx, repo); err != nil || len(ts) != 0 {
		t.Fatalf("list before any task: %v, %v", ts, err)
	}
	if _, err := eng.Task(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("reading a task with no ledger: %v, want not found", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read created the ledger: %v", err)
	}
	if err := eng.CanRun(); !errors.Is(err, app.ErrNoAgentBackend) {
		t.Fatalf("CanRun with no agent: %v, want ErrNoAgentBackend", err)
	}

	tk, err := eng.CreateTask(ctx, app.TaskRequest{Repo: repo, Goal: "make Double overflow-safe",
		Selection: &engine.Selection{File: "num/num.go", StartLine: 4, EndLine: 6}, Criteria: []string{"no wrap"}})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Selection == nil || tk.Selection.SHA256 == "" {
		t.Fatalf("the created task's selection was not recorded with its hash: %+v", tk.Selection)
	}
	if err := eng.UseLedger(path, backend.Choice{}); !errors.Is(err, app.ErrLedgerOpen) {
		t.Fatalf("UseLedger after the ledger opened: %v, want ErrLedgerOpen", err)
	}
	rows, err := eng.TaskRows(ctx, repo)
	if err != nil || len(rows) != 1 || rows[0].Task.ID != tk.ID || rows[0].LastEvent == nil || rows[0].LastEvent.Kind != engine.EventCreated {
		t.Fatalf("task rows: %+v, %v; want the one task with its %s event", rows, err, engine.EventCreated)
	}
	if seq, err := eng.LastSeq(ctx, repo); err != nil || seq != rows[0].LastEvent.Seq {
		t.Fatalf("last seq %d, %v; want %d", seq, err, rows[0].LastEvent.Seq)
	}
	d, err := eng.TaskDetail(ctx, tk.ID, 0, 10)
	if err != nil || d.Task.ID != tk.ID || len(d.Events) != 1 || d.Omitted != 0 || d.Attempts == nil || d.Verification != nil {
		t.Fatalf("detail %+v, %v", d, err)
	}
	var kinds []engine.EventKind
	if err := eng.TaskEvents(ctx, tk.ID, 0, false, func(ev engine.Event) error { kinds = append(kinds, ev.Kind); return nil }); err != nil || len(kinds) != 1 {
		t.Fatalf("events %v, %v", kinds, err)
	}
	st, err := eng.TaskStatus(ctx, tk.ID)
	if err != nil || st.Task.Status != engine.TaskQueued {
		t.Fatalf("status %+v, %v", st, err)
	}
	if _, err := eng.RejectTask(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	var last engine.Event
	if err := eng.TaskEvents(ctx, tk.ID, 0, false, func(ev engine.Event) error { last = ev; return nil }); err != nil {
		t.Fatal(err)
	}
	if last.Kind != task.EventRejected {
		t.Fatalf("last event %s, want %s", last.Kind, task.EventRejected)
	}
}
