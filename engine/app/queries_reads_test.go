package app

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// countingStore counts the reads a query makes of the ledger (every read
// method of ledger.Store) and the rows they return, the way the runner's
// TestTurnReadsDoNotGrowWithTheLog counts its event reads.
type countingStore struct {
	ledger.Store

	mu    sync.Mutex
	calls int
	rows  int
}

func (c *countingStore) count(rows int) {
	c.mu.Lock()
	c.calls++
	c.rows += rows
	c.mu.Unlock()
}

func (c *countingStore) reset() (calls, rows int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, rows, c.calls, c.rows = c.calls, c.rows, 0, 0
	return calls, rows
}

func (c *countingStore) Task(ctx context.Context, id string) (*engine.Task, error) {
	t, err := c.Store.Task(ctx, id)
	c.count(1)
	return t, err
}

func (c *countingStore) Tasks(ctx context.Context, repo string) ([]engine.Task, error) {
	ts, err := c.Store.Tasks(ctx, repo)
	c.count(len(ts))
	return ts, err
}

func (c *countingStore) Lease(ctx context.Context, taskID string) (*engine.Lease, error) {
	l, err := c.Store.Lease(ctx, taskID)
	c.count(1)
	return l, err
}

func (c *countingStore) Attempts(ctx context.Context, taskID string) ([]engine.Attempt, error) {
	as, err := c.Store.Attempts(ctx, taskID)
	c.count(len(as))
	return as, err
}

func (c *countingStore) Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error) {
	evs, err := c.Store.Events(ctx, taskID, afterSeq, limit)
	c.count(len(evs))
	return evs, err
}

func (c *countingStore) LatestEvents(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, int, error) {
	evs, older, err := c.Store.LatestEvents(ctx, taskID, afterSeq, limit)
	c.count(len(evs))
	return evs, older, err
}

func (c *countingStore) NewestEvents(ctx context.Context, repo string) (map[string]engine.Event, error) {
	evs, err := c.Store.NewestEvents(ctx, repo)
	c.count(len(evs))
	return evs, err
}

func (c *countingStore) Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error) {
	vs, err := c.Store.Verifications(ctx, repo, limit)
	c.count(len(vs))
	return vs, err
}

func (c *countingStore) TaskVerifications(ctx context.Context, taskID string, limit int) ([]engine.VerificationRun, error) {
	vs, err := c.Store.TaskVerifications(ctx, taskID, limit)
	c.count(len(vs))
	return vs, err
}

func (c *countingStore) ModelCalls(ctx context.Context, taskID string) ([]engine.ModelCall, error) {
	cs, err := c.Store.ModelCalls(ctx, taskID)
	c.count(len(cs))
	return cs, err
}

func (c *countingStore) EndpointSessions(ctx context.Context, endpoint string) (int, int, error) {
	held, limit, err := c.Store.EndpointSessions(ctx, endpoint)
	c.count(1)
	return held, limit, err
}

// queryReads fills a real SQLite ledger with n tasks of one checkout (each
// with three events and two gate runs) and returns the ledger reads, and
// rows read, of the task list and of one task's detail.
func queryReads(t *testing.T, n int) (listCalls, detailCalls, detailRows int) {
	t.Helper()
	ctx := context.Background()
	dir := testrepo.FromTxtar(t, "-- a.txt --\na\n").Dir
	repo, err := checkoutDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingStore{Store: l}
	e := Open(Options{LedgerPath: filepath.Join(t.TempDir(), "unused.db")})
	e.led = counter
	t.Cleanup(func() { e.Close() })

	var tasks []engine.Task
	for i := range n {
		tk := &engine.Task{Repo: repo, Goal: fmt.Sprintf("task %d", i), Base: "b"}
		if err := l.CreateTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
		for j := range 2 {
			if _, err := l.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "user.note"}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.RecordVerification(ctx, &engine.VerificationRun{TaskID: tk.ID, Attempt: int64(j + 1), Repo: repo, Base: "b", Head: "h", Verdict: "failed"}); err != nil {
				t.Fatal(err)
			}
		}
		tasks = append(tasks, *tk)
	}
	// A check outside any task, in the same repository.
	if _, err := l.RecordVerification(ctx, &engine.VerificationRun{Repo: repo, Base: "b", Head: "h", Verdict: "verified"}); err != nil {
		t.Fatal(err)
	}
	counter.reset()

	rows, err := e.TaskRows(ctx, dir)
	if err != nil || len(rows) != n {
		t.Fatalf("TaskRows: %d rows, %v; want %d", len(rows), err, n)
	}
	for _, r := range rows {
		if r.LastEvent == nil || r.LastEvent.TaskID != r.Task.ID || r.LastEvent.Kind != "user.note" {
			t.Fatalf("task %s's newest event: %+v", r.Task.ID, r.LastEvent)
		}
	}
	listCalls, _ = counter.reset()

	first := tasks[0]
	d, err := e.TaskDetail(ctx, first.ID, 0, 10)
	if err != nil || d.Verification == nil || d.Verification.TaskID != first.ID || d.Verification.Attempt != 2 || len(d.Events) != 3 {
		t.Fatalf("TaskDetail of the first task: %+v, %v; want its 3 events and its attempt-2 run", d, err)
	}
	detailCalls, detailRows = counter.reset()
	return listCalls, detailCalls, detailRows
}

// TestTaskQueryReadsDoNotGrowWithTheTasks: the panel's task list makes as
// many ledger reads over 50 tasks as over 2 (no read per task), and one
// task's detail reads as many rows when its repository has 50 tasks' gate
// runs as when it has 2 (its own newest run, not the repository's).
func TestTaskQueryReadsDoNotGrowWithTheTasks(t *testing.T) {
	list2, detail2, rows2 := queryReads(t, 2)
	list50, detail50, rows50 := queryReads(t, 50)
	t.Logf("TaskRows: %d reads over 2 tasks, %d over 50; TaskDetail: %d reads of %d rows with 2 tasks, %d reads of %d rows with 50",
		list2, list50, detail2, rows2, detail50, rows50)
	if list50 != list2 {
		t.Errorf("TaskRows made %d ledger reads over 50 tasks, %d over 2", list50, list2)
	}
	if detail50 != detail2 || rows50 != rows2 {
		t.Errorf("TaskDetail read %d rows in %d reads with 50 tasks, %d in %d with 2", rows50, detail50, rows2, detail2)
	}
}
