package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// BenchClaims measures claiming: b.N queued tasks, runners workers (each
// with its own handle, as separate processes would have) that each loop
// ClaimNext, then finish the claimed task the way a scripted run that
// succeeds at once does (one fenced event, the verified status, Release),
// until nothing is runnable. It reports claims/s over the whole drain and
// the latency of ClaimNext alone (p50, p99, in ms).
func BenchClaims(b *testing.B, open func() ledger.Store, runners int) {
	ctx := context.Background()
	setup := open()
	for i := range b.N {
		if err := setup.CreateTask(ctx, &engine.Task{Repo: "/bench", Goal: fmt.Sprint("task ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	stores := make([]ledger.Store, runners)
	for i := range stores {
		stores[i] = open()
	}
	var (
		mu   sync.Mutex
		lats []time.Duration
		wg   sync.WaitGroup
		errs = make(chan error, runners)
	)
	b.ResetTimer()
	start := time.Now()
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[i]
			// Each runner stands for its own machine: only TTLs free leases.
			h := ledger.Holder{Owner: fmt.Sprintf("bench-%d", i), Host: fmt.Sprintf("bench-%d", i), PID: 1 << 20, BootID: fmt.Sprintf("boot-%d", i)}
			var mine []time.Duration
			defer func() { mu.Lock(); lats = append(lats, mine...); mu.Unlock() }()
			for {
				t0 := time.Now()
				l, _, err := s.ClaimNext(ctx, h, time.Minute)
				if errors.Is(err, ledger.ErrNothingRunnable) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mine = append(mine, time.Since(t0))
				if _, err := s.Append(ctx, &l, &engine.Event{TaskID: l.TaskID, Kind: "bench.done"}); err != nil {
					errs <- err
					return
				}
				t, err := s.Task(ctx, l.TaskID)
				if err == nil {
					t.Status = engine.TaskVerified
					err = s.UpdateTask(ctx, l, t)
				}
				if err == nil {
					err = s.Release(ctx, l)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if len(lats) != b.N {
		b.Fatalf("%d claims of %d tasks", len(lats), b.N)
	}
	slices.Sort(lats)
	pct := func(p float64) float64 {
		return float64(lats[min(len(lats)-1, int(p*float64(len(lats))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
