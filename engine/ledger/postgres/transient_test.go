package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
)

// TestSessionsTerminatedMidUse: an administrator terminates every session
// of the runner's pool (pg_terminate_backend: the server sends 57P01 and
// closes the connection, as a restart does) between its calls, again and
// again. Each call retries on a fresh connection and succeeds: no call of
// a runner whose lease is valid fails for it, and nothing is written twice.
func TestSessionsTerminatedMidUse(t *testing.T) {
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	terminate := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tk := &engine.Task{ID: "t-terminated", Repo: "/r", Goal: "g", Base: "b", Branch: "bcode/t-terminated", Status: engine.TaskQueued}
	if err := st.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	lease, _, err := st.Acquire(ctx, tk.ID, ledger.LocalHolder(""), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	const rounds = 20
	for i := 0; i < rounds; i++ {
		killed += terminate()
		data, _ := json.Marshal(map[string]int{"round": i})
		if _, err := st.Append(ctx, &lease, &engine.Event{TaskID: tk.ID, Kind: "test.round", Data: data}); err != nil {
			t.Fatalf("round %d: Append after the sessions were terminated: %v", i, err)
		}
		killed += terminate()
		if lease, err = st.Heartbeat(ctx, lease, time.Minute); err != nil {
			t.Fatalf("round %d: Heartbeat: %v", i, err)
		}
		killed += terminate()
		if _, err := st.Task(ctx, tk.ID); err != nil {
			t.Fatalf("round %d: Task: %v", i, err)
		}
	}
	if killed < rounds {
		t.Fatalf("only %d sessions were terminated: the test did not cut the pool's connections", killed)
	}
	evs, err := st.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, ev := range evs {
		if ev.Kind != "test.round" {
			continue
		}
		var d struct{ Round int }
		json.Unmarshal(ev.Data, &d)
		if seen[d.Round] {
			t.Errorf("round %d written twice", d.Round)
		}
		seen[d.Round] = true
	}
	if len(seen) != rounds {
		t.Errorf("%d rounds recorded, want %d", len(seen), rounds)
	}
	t.Logf("%d sessions terminated over %d rounds; every call succeeded", killed, rounds)
}
