package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestUpgradeAddsTheTaskQueriesIndex: a database written before
// verification_runs_by_task (schema 1) gets it on open and keeps its runs,
// and the per-task queries can be answered through indexes (sequential
// scans are disabled, so a plan that needs one costs more than any other).
func TestUpgradeAddsTheTaskQueriesIndex(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tk := &engine.Task{Repo: "/r", Goal: "g", Base: "b"}
	if err := s.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordVerification(ctx, &engine.VerificationRun{TaskID: tk.ID, Repo: "/r", Base: "b", Head: "h", Verdict: "verified"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Turn it back into a schema-1 database (without the index, the journal
	// and the oracles, which came later).
	if _, err := conn.Exec(ctx, `DROP INDEX verification_runs_by_task; DROP TABLE claims; DROP TABLE task_oracles; DROP TABLE base_results; DELETE FROM bcode_schema_migrations WHERE version >= 2`); err != nil {
		t.Fatal(err)
	}
	s, err = postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM bcode_schema_migrations`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("schema after the upgrade: %d, %v; want %d", version, err, postgres.SchemaVersion)
	}
	runs, err := s.TaskVerifications(ctx, tk.ID, 1)
	if err != nil || len(runs) != 1 || runs[0].Head != "h" {
		t.Fatalf("TaskVerifications after the upgrade: %+v, %v", runs, err)
	}

	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	if p := plan(`SELECT id FROM verification_runs WHERE task_id = $1 ORDER BY id DESC LIMIT 1`, tk.ID); !strings.Contains(p, "verification_runs_by_task") {
		t.Errorf("a task's runs are not read through verification_runs_by_task:\n%s", p)
	}
	p := plan(postgres.NewestEventsQuery+` WHERE t.repo = $1`, "/r")
	t.Logf("NewestEvents plan:\n%s", p)
	if !strings.Contains(p, "Index Scan Backward using events_by_task") || strings.Contains(p, "Seq Scan") {
		t.Errorf("the newest events are not read by one backward probe of events_by_task per task:\n%s", p)
	}
}
