package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/task"
)

// TestTaskCreateSelectionInNewFile: `bcode task create --selection` on a
// file that is new and not committed fails (exit 1) saying to commit it
// first, and records nothing.
func TestTaskCreateSelectionInNewFile(t *testing.T) {
	repo := taskRepo(t, closedPort(t))
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "sub.go"), []byte("package calc\n\nfunc Sub(a, b int) int { return a + b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTaskCmd(t, repo, state, "create", "make Sub subtract", "--selection", "sub.go:3-3")
	if code != 1 || out != "" || !strings.Contains(errOut, "sub.go is not in") || !strings.Contains(errOut, "commit it first") {
		t.Fatalf("create on a new file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, out, _ = runTaskCmd(t, repo, state, "status"); strings.Contains(out, "make Sub") {
		t.Errorf("a task was recorded: %s", out)
	}
}

// TestTaskRunRecordsStartFailure: `bcode task run` with no model answering
// exits with the fix and leaves a task.start_failed event in the ledger.
func TestTaskRunRecordsStartFailure(t *testing.T) {
	repo := taskRepo(t, closedPort(t))
	state := t.TempDir()
	code, out, errOut := runTaskCmd(t, repo, state, "create", "make Add add")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	if code, _, errOut = runTaskCmd(t, repo, state, "run", id); code == 0 || !strings.Contains(errOut, "bcode model serve") {
		t.Fatalf("run: exit %d, stderr %q", code, errOut)
	}
	eng := app.Open(app.Options{LedgerPath: filepath.Join(state, "ledger.db")})
	defer eng.Close()
	st, err := eng.TaskStatus(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Task.Status != "queued" || !strings.HasPrefix(st.Task.Reason, "could not start: ") {
		t.Errorf("task after the run: %+v", st.Task)
	}
	var kinds []string
	if err := eng.TaskEvents(t.Context(), id, 0, false, func(ev engine.Event) error { kinds = append(kinds, string(ev.Kind)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(kinds, " "), string(task.EventStartFailed)) {
		t.Errorf("events %v lack %s", kinds, task.EventStartFailed)
	}
}
