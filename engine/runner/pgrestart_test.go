package runner

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/bcode-dev/bcode/engine/task"
)

// TestPostgresRestartMidRun: the shared ledger's server is restarted
// (fast shutdown: every session gets 57P01, then connection refused for
// two seconds) while a runner works on a task. The runner's ledger calls
// retry until the server is back, within the lease's TTL, so the task goes
// on under the same lease: it ends verified at fence 1, with no takeover
// and no task.recovered, and every event is there once.
func TestPostgresRestartMidRun(t *testing.T) {
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := task.New(st)
	e.StateDir, e.TTL, e.Poll = t.TempDir(), 15*time.Second, 20*time.Millisecond
	tk := createTask(t, e, newRepo(t, nil), engine.Budgets{})
	started := make(chan int, 64)
	r := &Runner{Engine: e, Agent: &scriptAgent{doneAfter: 4, delay: 250 * time.Millisecond, started: started}, Checker: fileChecker{}}
	type result struct {
		res *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := r.Run(ctx, tk.ID)
		done <- result{res, err}
	}()
	// Mid-run: the first attempt's second turn has begun.
	for n := 0; n < 2; {
		select {
		case <-started:
			n++
		case out := <-done:
			t.Fatalf("the run ended before the restart: %+v, %v", out.res, out.err)
		case <-ctx.Done():
			t.Fatal("the agent never took two turns")
		}
	}
	restarted := time.Now()
	pgtest.Restart(t, 2*time.Second)
	t.Logf("PostgreSQL was down for %s", time.Since(restarted).Round(time.Millisecond))
	select {
	case out := <-done:
		t.Fatalf("the run ended during the restart: %+v, %v", out.res, out.err)
	default:
	}
	out := <-done
	if out.err != nil {
		t.Fatalf("the run failed across the restart: %v", out.err)
	}
	if out.res.Task.Status != engine.TaskVerified || out.res.Fence != 1 {
		t.Fatalf("after the restart: task %s at fence %d, want verified at fence 1 (no takeover)", out.res.Task.Status, out.res.Fence)
	}
	evs, err := st.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	turns := map[[2]int64]bool{}
	for _, ev := range evs {
		if ev.Kind == task.EventRecovered {
			t.Errorf("a task.recovered event: the restart caused a takeover: %s", ev.Data)
		}
		if ev.Fence > 1 {
			t.Errorf("event %d (%s) at fence %d: the task was claimed again", ev.Seq, ev.Kind, ev.Fence)
		}
		if ev.Kind == task.EventTurn {
			// A write retried after a commit that did land would show
			// as the same turn twice.
			var d struct{ Turn int64 }
			json.Unmarshal(ev.Data, &d)
			key := [2]int64{ev.Attempt, d.Turn}
			if turns[key] {
				t.Errorf("attempt %d turn %d recorded twice", ev.Attempt, d.Turn)
			}
			turns[key] = true
		}
	}
	atts, err := st.Attempts(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range atts {
		if a.Status != engine.AttemptFinished {
			t.Errorf("attempt %d is %s, want finished", a.Number, a.Status)
		}
	}
	t.Logf("%d events, %d attempts, all at fence 1", len(evs), len(atts))
}
