package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
)

func TestRunToVerified(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	e := newEngine(t, 3*time.Second)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 3, MaxTurns: 20})
	var seen []engine.Event
	r := &Runner{Engine: e, Agent: &scriptAgent{doneAfter: 2}, Checker: fileChecker{}, OnEvent: func(ev engine.Event) { seen = append(seen, ev) }}
	res, err := r.Run(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != engine.TaskVerified || res.Task.Verdict != "verified" {
		t.Fatalf("status %s verdict %q reason %q, want verified", res.Task.Status, res.Task.Verdict, res.Task.Reason)
	}
	// The worktree is under the state dir, named by task and fence, and
	// not inside the user's checkout.
	if want := e.WorktreePath(tk.ID, res.Fence); res.Worktree != want || strings.HasPrefix(res.Worktree, repo) {
		t.Errorf("worktree %s, want %s outside %s", res.Worktree, want, repo)
	}
	if l, _ := e.Ledger.Lease(ctx, tk.ID); l != nil {
		t.Errorf("lease still held after the run: %+v", l)
	}
	atts, _ := e.Ledger.Attempts(ctx, tk.ID)
	if len(atts) != 2 || atts[0].Verdict != "failed" || atts[1].Verdict != "verified" {
		t.Fatalf("attempts %+v, want failed then verified", atts)
	}
	// One checkpoint commit per turn that changed files, trailers naming
	// task, attempt, turn and fence, each recorded in the turn's event.
	log := gitCmd(t, repo, "log", "--format=%H%x09%(trailers:key=Bcode-Attempt,key=Bcode-Turn,key=Bcode-Fence,separator=%x20)", tk.Base+".."+tk.Branch)
	lines := strings.Split(log, "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 checkpoint commits (2 attempts x 2 turns), got:\n%s", log)
	}
	evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
	recorded := task.RecordedCommits(evs)
	for _, l := range lines {
		id, tr, _ := strings.Cut(l, "\t")
		if !recorded[id] {
			t.Errorf("commit %s is not recorded in the ledger", id)
		}
		if !strings.Contains(tr, "Bcode-Turn:") || !strings.Contains(tr, "Bcode-Fence:") {
			t.Errorf("commit %s lacks trailers: %q", id, tr)
		}
	}
	if len(seen) == 0 || seen[len(seen)-1].Kind != task.EventVerified {
		t.Errorf("OnEvent saw %v, want it to end with task.verified", kinds(seen))
	}
	want := []string{"task.created", "task.started", "attempt.started", "turn.finished", "turn.finished", "check.started", "check.finished", "attempt.finished"}
	if got := kinds(evs); strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want them to start %v", got, want)
	}
	// Running a verified task again is refused.
	if _, err := r.Run(ctx, tk.ID); !errors.Is(err, ErrNotRunnable) {
		t.Errorf("second run: %v, want ErrNotRunnable", err)
	}
}

func TestBudgetsPark(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		budgets engine.Budgets
		agent   *scriptAgent
		reason  string
	}{
		{"turns", engine.Budgets{MaxAttempts: 5, MaxTurns: 3}, &scriptAgent{}, "turn budget spent: 3 of 3 turns"},
		{"attempts", engine.Budgets{MaxAttempts: 1, MaxTurns: 50}, &scriptAgent{doneAfter: 1}, "attempt budget spent: 1 of 1 attempts"},
		{"tokens", engine.Budgets{MaxAttempts: 5, MaxTurns: 50, MaxTokens: 1000}, &scriptAgent{tokens: 400}, "token budget spent: 1200 of 1000 tokens"},
		{"wall", engine.Budgets{MaxAttempts: 5, MaxTurns: 500, WallClock: 300 * time.Millisecond}, &scriptAgent{delay: 50 * time.Millisecond}, "wall-clock budget spent"},
		{"stuck", engine.Budgets{MaxAttempts: 5, MaxTurns: 50}, &scriptAgent{stuckAt: 2}, "the agent is stuck: cannot find the bug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, nil)
			e := newEngine(t, 3*time.Second)
			tk := createTask(t, e, repo, tc.budgets)
			res, err := (&Runner{Engine: e, Agent: tc.agent, Checker: fileChecker{}}).Run(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if res.Task.Status != engine.TaskBlocked || !strings.HasPrefix(res.Task.Reason, tc.reason) {
				t.Fatalf("status %s reason %q, want blocked: %s", res.Task.Status, res.Task.Reason, tc.reason)
			}
			evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
			if last := evs[len(evs)-1]; last.Kind != task.EventBlocked || !strings.Contains(string(last.Data), tc.reason) {
				t.Errorf("last event %s %s, want task.blocked with the reason", last.Kind, last.Data)
			}
			// Resume without more budget says which is spent; with more it runs.
			if tc.name == "turns" {
				if _, err := e.Resume(ctx, tk.ID, engine.Budgets{}); err == nil || !strings.Contains(err.Error(), "turn budget spent") {
					t.Fatalf("resume without budget: %v", err)
				}
				if _, err := e.Resume(ctx, tk.ID, engine.Budgets{MaxTurns: 2}); err != nil {
					t.Fatal(err)
				}
				res, err := (&Runner{Engine: e, Agent: tc.agent, Checker: fileChecker{}}).Run(ctx, tk.ID)
				if err != nil || res.Task.Reason != "turn budget spent: 5 of 5 turns" {
					t.Fatalf("after resume: %v, %+v", err, res.Task)
				}
			}
		})
	}
}

// Two runners race for one task from two ledger handles: exactly one gets
// the lease, the other is refused with ErrLeaseHeld.
func TestTwoRunnersRace(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	e := newEngine(t, 10*time.Second)
	led2, err := ledger.Open(ctx, e.Ledger.(*ledger.Ledger).Path())
	if err != nil {
		t.Fatal(err)
	}
	defer led2.Close()
	e2 := *e
	e2.Ledger = led2
	for round := 0; round < 10; round++ {
		tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 1, MaxTurns: 1})
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			wins  []engine.Lease
			helds int
		)
		for i, eng := range []*task.Engine{e, &e2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, _, err := eng.Claim(ctx, tk.ID, ledger.LocalHolder("racer-"+string(rune('a'+i))))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins = append(wins, l)
				case errors.Is(err, engine.ErrLeaseHeld):
					helds++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if len(wins) != 1 || helds != 1 {
			t.Fatalf("round %d: %d winners, %d refused; want exactly one of each", round, len(wins), helds)
		}
	}
}

func TestCancelDuringTurn(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	ttl := 900 * time.Millisecond
	e := newEngine(t, ttl)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 3, MaxTurns: 20})
	started := make(chan int, 1)
	r := &Runner{Engine: e, Agent: &scriptAgent{block: true, started: started}, Checker: fileChecker{}}
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() { res, err := r.Run(ctx, tk.ID); done <- out{res, err} }()
	select {
	case <-started:
	case o := <-done:
		t.Fatalf("run ended before its first turn: %v", o.err)
	}
	time.Sleep(50 * time.Millisecond) // the turn has written its first line
	asked := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := e.Cancel(cctx, tk.ID, "tester"); err != nil {
		t.Fatal(err)
	}
	o := <-done
	took := time.Since(asked)
	if o.err != nil {
		t.Fatalf("cancelled run returned %v", o.err)
	}
	// The heartbeat beats every TTL/3 and reads cancel requests on the
	// same beat: one beat, plus a clean stop.
	if took > ttl/3+time.Second {
		t.Errorf("cancel took %s, want within one heartbeat (%s) plus the clean stop", took, ttl/3)
	}
	st, err := e.Status(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Task.Status != engine.TaskCancelled || st.Lease != nil {
		t.Fatalf("status %s, lease %+v; want cancelled and released", st.Task.Status, st.Lease)
	}
	if len(st.Attempts) != 1 || st.Attempts[0].Status != engine.AttemptInterrupted {
		t.Errorf("attempts %+v, want one interrupted", st.Attempts)
	}
	// What the turn wrote before the cancel is committed, not lost.
	if got := gitCmd(t, repo, "show", tk.Branch+":work.txt"); got != "attempt 1 turn 1" {
		t.Errorf("work.txt on the branch = %q", got)
	}
	evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if k := kinds(evs); k[len(k)-1] != string(task.EventCancelled) {
		t.Errorf("events end %v, want task.cancelled", k)
	}
	if wt := e.WorktreePath(tk.ID, st.Attempts[0].Fence); gitCmd(t, wt, "status", "--porcelain") != "" {
		t.Errorf("worktree %s is not clean after the cancel", filepath.Base(wt))
	}
}
