package ledger

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// BenchmarkAppendEvent measures durable event appends: each is its own
// BEGIN IMMEDIATE transaction, committed with synchronous=FULL (an fsync of
// the WAL) before Append returns. The events/s metric is the ceiling on how
// fast a runner can record what it does, one acknowledged event at a time.
func BenchmarkAppendEvent(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		name := "unfenced"
		if fenced {
			name = "fenced"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			l := openTemp(b)
			task := &engine.Task{Repo: "/r", Goal: "bench"}
			if err := l.CreateTask(ctx, task); err != nil {
				b.Fatal(err)
			}
			var lease *engine.Lease
			if fenced {
				got, _, err := l.Acquire(ctx, task.ID, LocalHolder("bench"), time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				lease = &got
			}
			data := json.RawMessage(`{"turn":3,"files":["a.go","b_test.go"],"tokens":1234}`)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(ctx, lease, &engine.Event{TaskID: task.ID, Kind: "turn.done", Data: data}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}
