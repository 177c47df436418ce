package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/engine"
)

func TestEventsOrderAndFilters(t *testing.T) {
	ctx := context.Background()
	l := openTemp(t)
	a := newTask(t, l, "/r", "a")
	b := newTask(t, l, "/r", "b")
	var seqs []int64
	for i := range 10 {
		task := a
		if i%2 == 1 {
			task = b
		}
		seq, err := l.Append(ctx, nil, &engine.Event{TaskID: task.ID, Kind: "note", Data: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("seqs not increasing: %v", seqs)
		}
	}
	evA, _ := l.Events(ctx, a.ID, 0, 0)
	if len(evA) != 6 || evA[0].Kind != "task.created" || string(evA[1].Data) != `{"i":0}` || string(evA[5].Data) != `{"i":8}` {
		t.Errorf("events of a: %+v", evA)
	}
	page, _ := l.Events(ctx, "", seqs[3], 2)
	if len(page) != 2 || page[0].Seq != seqs[4] || page[1].Seq != seqs[5] {
		t.Errorf("page after %d: %+v", seqs[3], page)
	}
	// The newest page of a's six events, oldest first, with the count of
	// those left out; after a seq; more than there are; a bad limit.
	latest, omitted, err := l.LatestEvents(ctx, a.ID, 0, 2)
	if err != nil || omitted != 4 || len(latest) != 2 || string(latest[0].Data) != `{"i":6}` || string(latest[1].Data) != `{"i":8}` {
		t.Errorf("LatestEvents(a, 0, 2) = %+v, %d, %v; want i 6 and 8, 4 omitted", latest, omitted, err)
	}
	latest, omitted, err = l.LatestEvents(ctx, a.ID, seqs[6], 5)
	if err != nil || omitted != 0 || len(latest) != 1 || latest[0].Seq != seqs[8] {
		t.Errorf("LatestEvents(a, after seq of i=6, 5) = %+v, %d, %v; want only i=8", latest, omitted, err)
	}
	if all, omitted, err := l.LatestEvents(ctx, a.ID, 0, 100); err != nil || omitted != 0 || len(all) != 6 || all[0].Kind != "task.created" {
		t.Errorf("LatestEvents(a, 0, 100) = %d events, %d omitted, %v", len(all), omitted, err)
	}
	if _, _, err := l.LatestEvents(ctx, a.ID, 0, 0); err == nil {
		t.Error("LatestEvents with limit 0 succeeded")
	}
	if _, err := l.Append(ctx, nil, &engine.Event{TaskID: "ghost", Kind: "x"}); err == nil {
		t.Error("an event of a missing task was stored")
	}
	if _, err := l.Append(ctx, nil, &engine.Event{TaskID: a.ID, Kind: "x", Data: json.RawMessage(`{`)}); err == nil {
		t.Error("event data that is not JSON was stored")
	}
	if _, err := l.Append(ctx, nil, &engine.Event{TaskID: a.ID}); err == nil {
		t.Error("an event without a kind was stored")
	}
}

// TestConcurrentAppendsNoneLost has eight writers, four on each of two
// Ledgers open on one file, append 40 events each at once. Every returned
// seq must be stored with its data, seqs must be unique, and each writer's
// events must appear in the order it appended them.
func TestConcurrentAppendsNoneLost(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	ledgers := []*Ledger{openAt(t, path), openAt(t, path)}
	task := newTask(t, ledgers[0], "/r", "busy")
	const writers, each = 8, 40
	seqs := make([][]int64, writers)
	var wg sync.WaitGroup
	for w := range writers {
		l := ledgers[w%2]
		wg.Go(func() {
			for i := range each {
				data := json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))
				seq, err := l.Append(ctx, nil, &engine.Event{TaskID: task.ID, Kind: "tick", Data: data})
				if err != nil {
					t.Errorf("writer %d, event %d: %v", w, i, err)
					return
				}
				seqs[w] = append(seqs[w], seq)
			}
		})
	}
	wg.Wait()
	evs, err := ledgers[1].Events(ctx, task.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != writers*each+1 {
		t.Fatalf("%d events stored, want %d", len(evs), writers*each+1)
	}
	bySeq := map[int64]string{}
	for i, e := range evs {
		if i > 0 && e.Seq <= evs[i-1].Seq {
			t.Fatalf("Events not in seq order at %d", i)
		}
		bySeq[e.Seq] = string(e.Data)
	}
	for w, ss := range seqs {
		for i, seq := range ss {
			if want := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i); bySeq[seq] != want {
				t.Errorf("seq %d holds %q, want %q", seq, bySeq[seq], want)
			}
			if i > 0 && seq <= ss[i-1] {
				t.Errorf("writer %d: seq %d after %d", w, seq, ss[i-1])
			}
		}
	}
}
