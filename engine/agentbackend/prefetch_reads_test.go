package agentbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// countingModuleLedger counts the events a prefetcher reads.
type countingModuleLedger struct {
	ModuleLedger

	mu   sync.Mutex
	rows int
}

func (c *countingModuleLedger) Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error) {
	evs, err := c.ModuleLedger.Events(ctx, taskID, afterSeq, limit)
	c.mu.Lock()
	c.rows += len(evs)
	c.mu.Unlock()
	return evs, err
}

// taskWithEvents opens a ledger in a temp dir with one task that already
// has prior events (tool output of earlier turns), and returns both.
func taskWithEvents(tb testing.TB, prior int) (*ledger.Ledger, *engine.Task) {
	tb.Helper()
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(tb.TempDir(), "ledger.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { led.Close() })
	tk := &engine.Task{Goal: "g", Repo: "/repo", Base: "HEAD"}
	if err := led.CreateTask(ctx, tk); err != nil {
		tb.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"name": "terminal", "output": "an earlier turn's tool output"})
	for range prior {
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "agent.observation", Data: data}); err != nil {
			tb.Fatal(err)
		}
	}
	return led, tk
}

// turnReads runs the prefetcher's look at the start of an attempt, then
// turns turns that each append two events (one of them, at the third turn,
// the user's approval of a module), and returns the events its refreshes
// read after the start, and what it saw approved.
func turnReads(t *testing.T, prior, turns int) (int, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	led, tk := taskWithEvents(t, prior)
	counter := &countingModuleLedger{ModuleLedger: led}
	// No go.mod: nothing to fetch, the refresh is its reads alone.
	p := &prefetcher{dir: t.TempDir(), task: tk.ID, led: counter}
	if err := p.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	start := counter.rows
	for i := range turns {
		for _, kind := range []engine.EventKind{"agent.observation", "turn.finished"} {
			if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: kind}); err != nil {
				t.Fatal(err)
			}
		}
		if i == 2 {
			if _, err := ApproveModule(ctx, led, tk.ID, "example.com/m@v1.2.3"); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for v := range p.approvedNow() {
		seen[v.String()] = true
	}
	return counter.rows - start, seen
}

// TestPrefetchReadsOnlyNewEvents: after the attempt's start, each turn's
// refresh reads the events appended since the last one, whether the task
// has 5 earlier events or 500, and still sees an approval given between
// two turns.
func TestPrefetchReadsOnlyNewEvents(t *testing.T) {
	const turns = 10
	rows5, approved5 := turnReads(t, 5, turns)
	rows500, approved500 := turnReads(t, 500, turns)
	t.Logf("after the start, %d turns: 5 earlier events: %d rows read; 500: %d", turns, rows5, rows500)
	if want := 2*turns + 1; rows5 != want || rows500 != want {
		t.Errorf("rows read after the start: %d (5 earlier events), %d (500); want %d each: the events the turns appended", rows5, rows500, want)
	}
	for _, got := range []map[string]bool{approved5, approved500} {
		if !got["example.com/m@v1.2.3"] || len(got) != 1 {
			t.Errorf("approved after the turns: %v, want example.com/m@v1.2.3", got)
		}
	}
}

// BenchmarkTurnReads is the prefetcher's reads per turn (one turn's two
// events appended, untimed, then a refresh) on SQLite for a task whose log
// already holds 100 or 10000 events: with reads by cursor the two cost the
// same.
func BenchmarkTurnReads(b *testing.B) {
	for _, prior := range []int{100, 10000} {
		led, tk := taskWithEvents(b, prior)
		b.Run(fmt.Sprintf("events=%d", prior), func(b *testing.B) {
			ctx := context.Background()
			p := &prefetcher{dir: b.TempDir(), task: tk.ID, led: led}
			if err := p.refresh(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for _, kind := range []engine.EventKind{"agent.observation", "turn.finished"} {
					if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: kind}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := p.refresh(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
