package runner

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// countingReader counts the events the run reads from the ledger.
type countingReader struct {
	next eventReader

	mu    sync.Mutex
	calls int
	rows  int
	times map[int64]int // how often each event (by seq) was read
}

func (c *countingReader) Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error) {
	evs, err := c.next.Events(ctx, taskID, afterSeq, limit)
	c.mu.Lock()
	c.calls++
	c.rows += len(evs)
	if c.times == nil {
		c.times = map[int64]int{}
	}
	for _, e := range evs {
		c.times[e.Seq]++
	}
	c.mu.Unlock()
	return evs, err
}

// readsPerRun runs a task that already has prior events in the ledger for
// four turns (the agent is stuck at the fourth) and returns the events it
// read after its one read of the log at the start, and the turns run.
func readsPerRun(t *testing.T, prior int) (rows, calls, turns int) {
	t.Helper()
	ctx := context.Background()
	e := newEngine(t, 0)
	repo := newRepo(t, nil)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 1, MaxTurns: 50})
	for i := 0; i < prior; i++ {
		data, _ := json.Marshal(map[string]any{"name": "terminal", "output": "an earlier attempt's tool output"})
		if _, err := e.Ledger.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "agent.observation", Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingReader{next: e.Ledger}
	r := &Runner{Engine: e, Agent: &scriptAgent{stuckAt: 4, tokens: 10}, Checker: fileChecker{}, readEvents: counter}
	if _, err := r.Run(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.Turns != 4 || st.Usage.Tokens != 40 {
		t.Fatalf("usage after the run: %+v, want 4 turns and 40 tokens", st.Usage)
	}
	// The first read is the whole log, once per run.
	return counter.rows - len(all), counter.calls - 1, st.Usage.Turns
}

// TestTurnReadsDoNotGrowWithTheLog: a task with 500 events reads no more
// of the ledger per turn than one with 5: each turn reads only the events
// appended since the last (usage is kept, not recomputed from the log).
func TestTurnReadsDoNotGrowWithTheLog(t *testing.T) {
	rows5, calls5, turns := readsPerRun(t, 5)
	rows500, calls500, _ := readsPerRun(t, 500)
	t.Logf("after the start: 5 prior events: %d rows in %d reads; 500 prior events: %d rows in %d reads (%d turns)", rows5, calls5, rows500, calls500, turns)
	if rows500 != rows5 || calls500 != calls5 {
		t.Fatalf("a task with 500 events read %d rows in %d reads per run of %d turns, one with 5 read %d in %d", rows500, calls500, turns, rows5, calls5)
	}
}

// TestHeartbeatReadsOnlyNewEvents: the heartbeat looks for a cancel
// request in what was appended since its last beat, not in everything
// since the run started. With beats every 100 ms over turns of 250 ms, each
// event of the run is read at most twice after the start: once by the turn
// loop's usage, once by the heartbeat.
func TestHeartbeatReadsOnlyNewEvents(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, 300*time.Millisecond)
	repo := newRepo(t, nil)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 1, MaxTurns: 50})
	counter := &countingReader{next: e.Ledger}
	r := &Runner{Engine: e, Agent: &scriptAgent{stuckAt: 6, delay: 250 * time.Millisecond}, Checker: fileChecker{}, readEvents: counter}
	if _, err := r.Run(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	all, err := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	// The start's one read of the log took every event up to then once.
	if counter.calls < 6*2 {
		t.Fatalf("%d reads in a run of 6 turns of 250 ms with beats every 100 ms: the heartbeat did not read", counter.calls)
	}
	for _, ev := range all {
		if n := counter.times[ev.Seq]; n > 3 {
			t.Errorf("event %d (%s) was read %d times; want at most 3 (the start, the turn loop, the heartbeat)", ev.Seq, ev.Kind, n)
		}
	}
	t.Logf("%d events, %d reads, %d rows", len(all), counter.calls, counter.rows)
}
