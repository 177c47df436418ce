package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestFindTasks: a task list filtered by status and by repository, the
// most recently updated first; a status no task has is refused with the
// valid ones named.
func TestFindTasks(t *testing.T) {
	ctx := context.Background()
	repo := testrepo.FromTxtar(t, packRepo).Dir
	other := testrepo.FromTxtar(t, packRepo).Dir
	eng := app.Open(app.Options{LedgerPath: filepath.Join(t.TempDir(), "ledger.db"), By: "tester"})
	t.Cleanup(func() { eng.Close() })

	if ts, err := eng.FindTasks(ctx, app.TaskFilter{}); err != nil || len(ts) != 0 {
		t.Fatalf("no ledger yet: %v, %v", ts, err)
	}
	create := func(dir, goal string) engine.Task {
		t.Helper()
		tk, err := eng.CreateTask(ctx, app.TaskRequest{Repo: dir, Goal: goal})
		if err != nil {
			t.Fatal(err)
		}
		return *tk
	}
	first := create(repo, "first")
	second := create(repo, "second")
	elsewhere := create(other, "elsewhere")
	if err := eng.CancelTask(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	ids := func(f app.TaskFilter) string {
		t.Helper()
		ts, err := eng.FindTasks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return strings.Join(out, " ")
	}
	// The cancelled task was updated last.
	if got, want := ids(app.TaskFilter{}), strings.Join([]string{first.ID, elsewhere.ID, second.ID}, " "); got != want {
		t.Errorf("every task: %s; want %s", got, want)
	}
	if got, want := ids(app.TaskFilter{Repo: repo}), first.ID+" "+second.ID; got != want {
		t.Errorf("one repository: %s; want %s", got, want)
	}
	if got := ids(app.TaskFilter{Statuses: []engine.TaskStatus{engine.TaskCancelled}}); got != first.ID {
		t.Errorf("cancelled: %s; want %s", got, first.ID)
	}
	if got := ids(app.TaskFilter{Repo: other, Statuses: []engine.TaskStatus{engine.TaskCancelled}}); got != "" {
		t.Errorf("cancelled in the other repository: %s; want none", got)
	}

	sts, err := app.ParseTaskStatuses([]string{"verified,blocked", "queued", "blocked"})
	if err != nil || fmt.Sprint(sts) != "[verified blocked queued]" {
		t.Errorf("ParseTaskStatuses: %v, %v", sts, err)
	}
	_, err = app.ParseTaskStatuses([]string{"queued,done"})
	if !errors.Is(err, app.ErrUnknownStatus) || !strings.Contains(err.Error(), `"done"`) || !strings.Contains(err.Error(), "queued, running, verified, blocked, failed, not_reproducible, cancelled, accepted, rejected") {
		t.Errorf("an unknown status: %v", err)
	}
}
