package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// TestAcquireRace races four contenders, two goroutines on each of two
// separate Ledgers open on one file, for one task's lease, 50 rounds. All
// holders are alive, so exactly one may win each round; the fence rises by
// exactly one per round because losers must not consume a fence.
func TestAcquireRace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	ledgers := []*Ledger{openAt(t, path), openAt(t, path)}
	task := newTask(t, ledgers[0], "/r", "race")

	var lastFence int64
	for round := range 50 {
		type result struct {
			lease engine.Lease
			prev  *engine.Lease
			err   error
			l     *Ledger
		}
		results := make(chan result, 4)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 4 {
			l := ledgers[i%2]
			holder := LocalHolder(fmt.Sprintf("runner-%d-%d", round, i))
			wg.Go(func() {
				<-start
				lease, prev, err := l.Acquire(ctx, task.ID, holder, time.Minute)
				results <- result{lease, prev, err, l}
			})
		}
		close(start)
		wg.Wait()
		close(results)

		var winners []result
		for r := range results {
			switch {
			case r.err == nil:
				winners = append(winners, r)
			case !errors.Is(r.err, engine.ErrLeaseHeld):
				t.Fatalf("round %d: a loser got %v, want ErrLeaseHeld", round, r.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, len(winners))
		}
		w := winners[0]
		if w.lease.Fence != lastFence+1 || w.prev != nil {
			t.Fatalf("round %d: fence %d (last %d), prev %v", round, w.lease.Fence, lastFence, w.prev)
		}
		lastFence = w.lease.Fence
		if err := w.l.Release(ctx, w.lease); err != nil {
			t.Fatalf("round %d: Release: %v", round, err)
		}
	}
}

// liveness is a fake process table for WithAlive.
type liveness struct {
	mu   sync.Mutex
	dead map[int]bool
}

func (p *liveness) alive(pid int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead[pid]
}

func (p *liveness) kill(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead[pid] = true
}

// snapshot is everything a fenced-out writer might have touched.
func snapshot(t *testing.T, l *Ledger, taskID string) string {
	t.Helper()
	ctx := context.Background()
	task, err := l.Task(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := l.Events(ctx, taskID, 0, 0)
	atts, _ := l.Attempts(ctx, taskID)
	calls, _ := l.ModelCalls(ctx, taskID)
	lease, _ := l.Lease(ctx, taskID)
	return fmt.Sprintf("%+v\n%+v\n%+v\n%+v\n%+v", *task, evs, atts, calls, *lease)
}

func TestLeaseTakeoversAndFencing(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	procs := &liveness{dead: map[int]bool{}}
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openAt(t, path, WithClock(clock.now), WithAlive(procs.alive))
	task := newTask(t, l, "/r", "take over")
	const ttl = time.Minute
	holderA := Holder{Owner: "A", PID: 1001, BootID: "boot-1"}
	holderB := Holder{Owner: "B", PID: 1002, BootID: "boot-1"}
	holderC := Holder{Owner: "C", PID: 1003, BootID: "boot-1"}
	holderD := Holder{Owner: "D", PID: 1004, BootID: "boot-2"}

	if _, _, err := l.Acquire(ctx, "ghost", holderA, ttl); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Acquire of a missing task: %v", err)
	}
	a, prev, err := l.Acquire(ctx, task.ID, holderA, ttl)
	if err != nil || a.Fence != 1 || prev != nil || !a.Expires.Equal(clock.now().Add(ttl)) {
		t.Fatalf("A: %+v %v %v", a, prev, err)
	}
	attemptA, err := l.StartAttempt(ctx, a, task.ID)
	if err != nil {
		t.Fatal(err)
	}

	// A live holder is refused, and the error says who and until when.
	_, _, err = l.Acquire(ctx, task.ID, holderB, ttl)
	if !errors.Is(err, engine.ErrLeaseHeld) || !strings.Contains(err.Error(), "A (pid 1001) until") {
		t.Fatalf("B while A is live: %v", err)
	}

	// A heartbeat carries A past its first expiry.
	clock.advance(50 * time.Second)
	if a, err = l.Heartbeat(ctx, a, ttl); err != nil {
		t.Fatal(err)
	}
	clock.advance(50 * time.Second)
	if _, _, err := l.Acquire(ctx, task.ID, holderB, ttl); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("B after A's heartbeat: %v", err)
	}

	// Expiry: B takes over once A's lease is stale.
	clock.advance(11 * time.Second)
	b, prev, err := l.Acquire(ctx, task.ID, holderB, ttl)
	if err != nil || b.Fence != 2 || prev == nil || prev.Owner != "A" || prev.Fence != 1 || !prev.Heartbeat.Equal(a.Heartbeat) {
		t.Fatalf("B over expired A: %+v prev %+v, %v", b, prev, err)
	}

	// A is fenced out of everything and writes nothing.
	before := snapshot(t, l, task.ID)
	if _, err := l.Heartbeat(ctx, a, ttl); !errors.Is(err, engine.ErrFenced) || !strings.Contains(err.Error(), "now fence 2 of B") {
		t.Errorf("A's Heartbeat: %v", err)
	}
	called := false
	if err := l.Fenced(ctx, a, func(*sql.Tx) error { called = true; return nil }); !errors.Is(err, engine.ErrFenced) || called {
		t.Errorf("A's Fenced: %v, fn called %v", err, called)
	}
	stale := *task
	stale.Status, stale.Verdict = engine.TaskVerified, "verified"
	if err := l.UpdateTask(ctx, a, &stale); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's UpdateTask: %v", err)
	}
	if _, err := l.Append(ctx, &a, &engine.Event{TaskID: task.ID, Kind: "turn.done"}); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's Append: %v", err)
	}
	if _, err := l.StartAttempt(ctx, a, task.ID); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's StartAttempt: %v", err)
	}
	if err := l.FinishAttempt(ctx, a, attemptA); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's FinishAttempt: %v", err)
	}
	if _, err := l.RecordModelCall(ctx, a, &engine.ModelCall{Model: "m"}); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's RecordModelCall: %v", err)
	}
	if _, err := l.InterruptOrphans(ctx, a, task.ID); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's InterruptOrphans: %v", err)
	}
	if err := l.Release(ctx, a); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("A's Release: %v", err)
	}
	if after := snapshot(t, l, task.ID); after != before {
		t.Errorf("a fenced-out holder changed the ledger:\nbefore %s\nafter  %s", before, after)
	}

	// B closes A's orphaned attempt, and may not finish it as its own.
	if err := l.FinishAttempt(ctx, b, attemptA); err == nil || !strings.Contains(err.Error(), "InterruptOrphans") {
		t.Errorf("B finishing A's attempt: %v", err)
	}
	orphans, err := l.InterruptOrphans(ctx, b, task.ID)
	if err != nil || len(orphans) != 1 || orphans[0].ID != attemptA.ID || orphans[0].Status != engine.AttemptInterrupted || orphans[0].FinishedAt == nil {
		t.Fatalf("InterruptOrphans: %+v %v", orphans, err)
	}
	attemptB, err := l.StartAttempt(ctx, b, task.ID)
	if err != nil || attemptB.Number != 2 || attemptB.Fence != 2 {
		t.Fatalf("B's attempt: %+v %v", attemptB, err)
	}
	seq, err := l.Append(ctx, &b, &engine.Event{TaskID: task.ID, Attempt: attemptB.ID, Kind: "turn.done"})
	if err != nil {
		t.Fatal(err)
	}
	if evs, _ := l.Events(ctx, task.ID, seq-1, 0); len(evs) != 1 || evs[0].Fence != 2 || evs[0].Attempt != attemptB.ID {
		t.Errorf("B's event: %+v", evs)
	}

	// Dead pid on the same boot: C takes over at once, long before B's TTL.
	procs.kill(holderB.PID)
	clock.advance(time.Second)
	c, prev, err := l.Acquire(ctx, task.ID, holderC, ttl)
	if err != nil || c.Fence != 3 || prev == nil || prev.Owner != "B" {
		t.Fatalf("C over dead B: %+v prev %+v, %v", c, prev, err)
	}
	if orphans, err := l.InterruptOrphans(ctx, c, task.ID); err != nil || len(orphans) != 1 || orphans[0].ID != attemptB.ID {
		t.Errorf("C's orphans: %+v %v", orphans, err)
	}

	// A holder from another boot: its pid means nothing here, so D waits
	// for the TTL even though pid 1003 is "dead" in this boot's table.
	procs.kill(holderC.PID)
	if _, _, err := l.Acquire(ctx, task.ID, holderD, ttl); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("D (boot-2) over C (boot-1) before the TTL: %v", err)
	}
	clock.advance(ttl + time.Nanosecond)
	d, prev, err := l.Acquire(ctx, task.ID, holderD, ttl)
	if err != nil || d.Fence != 4 || prev == nil || prev.Owner != "C" {
		t.Fatalf("D after the TTL: %+v prev %+v, %v", d, prev, err)
	}

	// After a release the lease row is gone but the fence still rises.
	if err := l.Release(ctx, d); err != nil {
		t.Fatal(err)
	}
	if cur, err := l.Lease(ctx, task.ID); err != nil || cur != nil {
		t.Fatalf("Lease after Release: %+v %v", cur, err)
	}
	if _, err := l.Heartbeat(ctx, d, ttl); !errors.Is(err, engine.ErrFenced) || !strings.Contains(err.Error(), "released") {
		t.Errorf("Heartbeat after Release: %v", err)
	}
	e, prev, err := l.Acquire(ctx, task.ID, holderA, ttl)
	if err != nil || e.Fence != 5 || prev != nil {
		t.Fatalf("re-acquire after release: %+v prev %+v, %v", e, prev, err)
	}
	// The same owner acquiring again is a new acquisition: a new fence.
	e2, prev, err := l.Acquire(ctx, task.ID, holderA, ttl)
	if err != nil || e2.Fence != 6 || prev == nil || prev.Fence != 5 {
		t.Fatalf("same owner again: %+v prev %+v, %v", e2, prev, err)
	}
	if cur, _ := l.Lease(ctx, task.ID); cur == nil || *cur != e2 {
		t.Errorf("Lease = %+v, want %+v", cur, e2)
	}
	if _, _, err := l.Acquire(ctx, task.ID, holderA, 0); err == nil {
		t.Error("Acquire with ttl 0 succeeded")
	}
}

// TestRealProcessLiveness uses the default liveness check on real processes:
// an exited child's lease is taken over at once, a live one with the right
// start time is not, and a live pid with another start time is a reused pid.
func TestRealProcessLiveness(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs Linux /proc to read process start times")
	}
	ctx := context.Background()
	l := openTemp(t)
	task := newTask(t, l, "/r", "real pids")
	me := LocalHolder("")
	if me.BootID == "" || me.StartTime == 0 || !strings.Contains(me.Owner, fmt.Sprintf("/%d/", os.Getpid())) {
		t.Fatalf("LocalHolder: %+v", me)
	}
	other := LocalHolder("other")

	// A live holder (this very process, right start time) is refused.
	if _, _, err := l.Acquire(ctx, task.ID, me, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Acquire(ctx, task.ID, other, time.Hour); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("over a live holder: %v", err)
	}

	// Same pid, another start time: the pid was reused, the holder is dead.
	reused := me
	reused.Owner, reused.StartTime = "reused", me.StartTime+7
	task2 := newTask(t, l, "/r", "reused pid")
	if _, _, err := l.Acquire(ctx, task2.ID, reused, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, prev, err := l.Acquire(ctx, task2.ID, other, time.Hour); err != nil || prev == nil || prev.Owner != "reused" {
		t.Fatalf("over a reused pid: prev %+v, %v", prev, err)
	}

	// An exited child: gone from /proc once reaped.
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	task3 := newTask(t, l, "/r", "dead child")
	dead := Holder{Owner: "child", PID: child.Process.Pid, BootID: me.BootID, Host: me.Host}
	if _, _, err := l.Acquire(ctx, task3.ID, dead, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, prev, err := l.Acquire(ctx, task3.ID, other, time.Hour); err != nil || prev == nil || prev.Owner != "child" {
		t.Fatalf("over an exited child: prev %+v, %v", prev, err)
	}

	// A killed child not yet reaped is a zombie: dead too.
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	pid := sleeper.Process.Pid
	if !processAlive(pid) {
		t.Fatal("a running child counts as dead")
	}
	sleeper.Process.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if processAlive(pid) {
		t.Error("a killed, unreaped child (zombie) still counts as alive")
	}
	sleeper.Wait()
	if processAlive(pid) {
		t.Error("a reaped child counts as alive")
	}
}
