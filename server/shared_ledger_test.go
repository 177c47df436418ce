package server_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger/backend"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/fake"
)

// TestMain stops the throwaway PostgreSQL the shared-ledger test starts.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestSharedLedgerInTheEditor: with the user's choice of a shared ledger
// (bcode-ls --ledger / $BCODE_LEDGER), the task panel lists the tasks in
// that PostgreSQL database, not the SQLite file of the state directory,
// and never creates that file.
func TestSharedLedgerInTheEditor(t *testing.T) {
	state := t.TempDir()
	t.Setenv("BCODE_STATE", state)
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	shared, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	tk := seedTask(t, ctx, shared, dir, "a task another runner queued", engine.TaskQueued)

	choice, err := backend.Resolve(url)
	if err != nil {
		t.Fatal(err)
	}
	e := fake.Connect(t, dir, server.Options{NoWatch: true, NoEvidenceOnOpen: true, NoEvidenceOnSave: true, Ledger: choice})
	if _, err := e.Initialize(ctx, fake.Config{}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Tasks []struct{ ID, Goal string }
	}
	if err := e.Conn.Call(ctx, server.MethodTasks, struct{}{}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].ID != tk.ID {
		raw, _ := json.Marshal(res)
		t.Fatalf("bcode/tasks over the shared ledger: %s, want the one task %s", raw, tk.ID)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Fatalf("the state directory got %d entries: the server opened a SQLite ledger beside the shared one", len(entries))
	}
}
