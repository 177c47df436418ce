// Package ledgertest is the conformance suite every ledger.Store backend
// passes, in the style of river's riverdrivertest: one set of tests, run by
// each backend's own test package against a real store (a SQLite file in a
// temp dir, a throwaway PostgreSQL database). It covers every operation of
// the Store, the lease rules (expiry, the pid check on one host and boot,
// monotonic fences), fencing of every write, claims and acquisitions racing
// across handles, endpoint session slots, reopening, and the claim journal
// (one chain under concurrent appenders, appended with its event, fenced),
// and the bases' suite results the gate reuses.
package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// Options are what a handle is opened with.
type Options struct {
	// Now replaces the store's clock when set.
	Now func() time.Time
	// Alive replaces the pid check when set.
	Alive func(pid int) bool
}

// Backend makes one fresh, empty ledger for t and returns how to open
// handles on it. Every handle opened sees the same data (another process's
// view, as far as the backend can tell); the backend closes them at the
// end of t.
type Backend func(t *testing.T) func(o Options) ledger.Store

// Clock is a settable clock several handles share.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at a fixed time, whole microseconds (what Postgres keeps).
func NewClock() *Clock { return &Clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance steps the clock.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Run runs the whole suite against b.
func Run(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"Tasks", testTasks},
		{"UpdateTask", testUpdateTask},
		{"LeaseLifecycle", testLeaseLifecycle},
		{"LeaseExpiry", testLeaseExpiry},
		{"PidRule", testPidRule},
		{"FencingEveryWrite", testFencingEveryWrite},
		{"Attempts", testAttempts},
		{"Events", testEvents},
		{"NewestEvents", testNewestEvents},
		{"SumEvents", testSumEvents},
		{"RecordsAndCalls", testRecords},
		{"TaskVerifications", testTaskVerifications},
		{"ClaimNext", testClaimNext},
		{"ClaimRace", testClaimRace},
		{"AcquireRace", testAcquireRace},
		{"TakeoverDuringWrites", testTakeoverDuringWrites},
		{"EndpointSessions", testEndpointSessions},
		{"EndpointSessionRace", testEndpointSessionRace},
		{"Reopen", testReopen},
		{"InvalidArguments", testInvalidArguments},
		{"Journal", testJournal},
		{"JournalInvalid", testJournalInvalid},
		{"JournalRace", testJournalRace},
		{"Oracle", testOracle},
		{"CreateWithOracle", testCreateWithOracle},
		{"BaseResults", testBaseResults},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

var (
	holderA = ledger.Holder{Owner: "A", Host: "h1", PID: 1001, BootID: "boot-1"}
	holderB = ledger.Holder{Owner: "B", Host: "h1", PID: 1002, BootID: "boot-1"}
	holderC = ledger.Holder{Owner: "C", Host: "h2", PID: 1003, BootID: "boot-2"}
)

// allAlive: every pid lives, so only expiry frees a lease.
func allAlive(int) bool { return true }

func open1(t *testing.T, b Backend) (ledger.Store, *Clock) {
	c := NewClock()
	return b(t)(Options{Now: c.Now, Alive: allAlive}), c
}

func newTask(t *testing.T, s ledger.Store, repo, goal string) *engine.Task {
	t.Helper()
	tk := &engine.Task{Repo: repo, Goal: goal, Base: "abc"}
	if err := s.CreateTask(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func acquire(t *testing.T, s ledger.Store, id string, h ledger.Holder, ttl time.Duration) engine.Lease {
	t.Helper()
	l, _, err := s.Acquire(context.Background(), id, h, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func testTasks(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	sel := &engine.Selection{File: "a.go", StartLine: 1, EndLine: 3, Text: "x := 1", SHA256: "ff"}
	t1 := &engine.Task{Repo: "/r1", Goal: "first", Base: "b1", Selection: sel, Criteria: []string{"tests pass", "no new deps"},
		Budgets: engine.Budgets{MaxAttempts: 3, MaxTurns: 7, MaxTokens: 9000, WallClock: time.Hour}}
	if err := s.CreateTask(ctx, t1); err != nil {
		t.Fatal(err)
	}
	if t1.ID == "" || t1.Status != engine.TaskQueued || t1.Branch != "bcode/"+t1.ID || !t1.CreatedAt.Equal(c.Now()) {
		t.Fatalf("defaults not filled in: %+v", t1)
	}
	c.Advance(time.Second)
	t2 := newTask(t, s, "/r2", "second")
	c.Advance(time.Second)
	t3 := newTask(t, s, "/r1", "third")

	got := must[*engine.Task](t)(s.Task(ctx, t1.ID))
	if got.Goal != "first" || got.Repo != "/r1" || got.Base != "b1" || *got.Selection != *sel ||
		fmt.Sprint(got.Criteria) != fmt.Sprint(t1.Criteria) || got.Budgets != t1.Budgets || !got.CreatedAt.Equal(t1.CreatedAt) {
		t.Fatalf("read back %+v, wrote %+v", got, t1)
	}
	if _, err := s.Task(ctx, "nosuch"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("missing task: %v, want ErrNotFound", err)
	}
	all := must[[]engine.Task](t)(s.Tasks(ctx, ""))
	if len(all) != 3 || all[0].ID != t3.ID || all[1].ID != t2.ID || all[2].ID != t1.ID {
		t.Fatalf("Tasks: %v, want newest first", ids(all))
	}
	r1 := must[[]engine.Task](t)(s.Tasks(ctx, "/r1"))
	if len(r1) != 2 || r1[0].ID != t3.ID || r1[1].ID != t1.ID {
		t.Fatalf("Tasks(/r1): %v", ids(r1))
	}
	if err := s.CreateTask(ctx, &engine.Task{ID: t1.ID, Repo: "/r", Goal: "dup"}); err == nil {
		t.Fatal("a second task with the same id was stored")
	}
	for _, bad := range []*engine.Task{nil, {Repo: "/r"}, {Goal: "g"}, {Repo: "/r", Goal: "g", Status: "weird"}} {
		if err := s.CreateTask(ctx, bad); err == nil {
			t.Errorf("CreateTask(%+v) succeeded", bad)
		}
	}
	evs := must[[]engine.Event](t)(s.Events(ctx, t1.ID, 0, 0))
	if len(evs) != 1 || evs[0].Kind != "task.created" {
		t.Fatalf("events of a new task: %+v", evs)
	}
	var d map[string]string
	if json.Unmarshal(evs[0].Data, &d) != nil || d["goal"] != "first" || d["branch"] != t1.Branch {
		t.Fatalf("task.created data %s", evs[0].Data)
	}
}

func ids(ts []engine.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func testUpdateTask(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "goal")
	l := acquire(t, s, tk.ID, holderA, time.Minute)
	c.Advance(time.Second)
	tk.Status, tk.Reason, tk.Verdict = engine.TaskBlocked, "budget", "green"
	if err := s.UpdateTask(ctx, l, tk); err != nil {
		t.Fatal(err)
	}
	got := must[*engine.Task](t)(s.Task(ctx, tk.ID))
	if got.Status != engine.TaskBlocked || got.Reason != "budget" || got.Verdict != "green" ||
		!got.UpdatedAt.Equal(c.Now()) || !got.UpdatedAt.Equal(tk.UpdatedAt) || !got.CreatedAt.Equal(tk.CreatedAt) {
		t.Fatalf("after UpdateTask: %+v", got)
	}
	other := newTask(t, s, "/r", "other")
	if err := s.UpdateTask(ctx, l, other); err == nil {
		t.Fatal("UpdateTask of another task under this lease succeeded")
	}
	tk.Status = "weird"
	if err := s.UpdateTask(ctx, l, tk); err == nil {
		t.Fatal("UpdateTask with an unknown status succeeded")
	}
}

func testLeaseLifecycle(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	if _, _, err := s.Acquire(ctx, "nosuch", holderA, time.Minute); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Acquire of a missing task: %v", err)
	}
	if _, _, err := s.Acquire(ctx, tk.ID, holderA, 0); err == nil {
		t.Fatal("Acquire with ttl 0 succeeded")
	}
	if _, _, err := s.Acquire(ctx, tk.ID, ledger.Holder{}, time.Minute); err == nil {
		t.Fatal("Acquire with no owner succeeded")
	}
	l1, prev, err := s.Acquire(ctx, tk.ID, holderA, time.Minute)
	if err != nil || prev != nil || l1.Fence != 1 || l1.Owner != "A" || !l1.Expires.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("first Acquire: %+v prev %v err %v", l1, prev, err)
	}
	if _, _, err := s.Acquire(ctx, tk.ID, holderB, time.Minute); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("Acquire of a live lease: %v, want ErrLeaseHeld", err)
	}
	got := must[*engine.Lease](t)(s.Lease(ctx, tk.ID))
	if got == nil || *got != l1 {
		t.Fatalf("Lease: %+v, want %+v", got, l1)
	}
	// The same owner again: a new fence, and the old one is fenced out.
	l2, prev, err := s.Acquire(ctx, tk.ID, holderA, time.Minute)
	if err != nil || l2.Fence != 2 || prev == nil || prev.Fence != 1 {
		t.Fatalf("re-Acquire by the owner: %+v prev %+v err %v", l2, prev, err)
	}
	if _, err := s.Heartbeat(ctx, l1, time.Minute); !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("Heartbeat of the older fence: %v", err)
	}
	c.Advance(10 * time.Second)
	l2b, err := s.Heartbeat(ctx, l2, 2*time.Minute)
	if err != nil || !l2b.Expires.Equal(c.Now().Add(2*time.Minute)) || !l2b.Heartbeat.Equal(c.Now()) || l2b.Fence != 2 {
		t.Fatalf("Heartbeat: %+v %v", l2b, err)
	}
	if err := s.Release(ctx, l1); !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("Release of an older fence: %v", err)
	}
	if err := s.Release(ctx, l2b); err != nil {
		t.Fatal(err)
	}
	if got := must[*engine.Lease](t)(s.Lease(ctx, tk.ID)); got != nil {
		t.Fatalf("lease after Release: %+v", got)
	}
	if err := s.Release(ctx, l2b); !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("second Release: %v", err)
	}
	// The fence counter outlives the lease row.
	l3, prev, err := s.Acquire(ctx, tk.ID, holderB, time.Minute)
	if err != nil || l3.Fence != 3 || prev != nil {
		t.Fatalf("Acquire after Release: %+v prev %+v err %v", l3, prev, err)
	}
}

func testLeaseExpiry(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	la := acquire(t, s, tk.ID, holderC, 30*time.Second) // another machine
	c.Advance(29 * time.Second)
	if _, _, err := s.Acquire(ctx, tk.ID, holderA, time.Minute); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("before expiry: %v", err)
	}
	c.Advance(time.Second)
	lb, prev, err := s.Acquire(ctx, tk.ID, holderA, time.Minute)
	if err != nil || prev == nil || prev.Owner != "C" || prev.Fence != la.Fence || lb.Fence != la.Fence+1 {
		t.Fatalf("at expiry: %+v prev %+v err %v", lb, prev, err)
	}
	if _, err := s.Heartbeat(ctx, la, time.Minute); !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("the expired holder's heartbeat: %v", err)
	}
	// An expired lease nobody took over is still its holder's.
	tk2 := newTask(t, s, "/r", "g2")
	l := acquire(t, s, tk2.ID, holderA, time.Second)
	c.Advance(time.Hour)
	if _, err := s.Heartbeat(ctx, l, time.Minute); err != nil {
		t.Fatalf("renewing an expired, untaken lease: %v", err)
	}
}

func testPidRule(t *testing.T, b Backend) {
	ctx := context.Background()
	dead := map[int]bool{1001: true}
	c := NewClock()
	s := b(t)(Options{Now: c.Now, Alive: func(pid int) bool { return !dead[pid] }})
	// Same host and boot, holder dead: taken over at once.
	tk := newTask(t, s, "/r", "g")
	acquire(t, s, tk.ID, holderA, time.Hour)
	if _, prev, err := s.Acquire(ctx, tk.ID, holderB, time.Hour); err != nil || prev == nil || prev.Owner != "A" {
		t.Fatalf("over a dead pid on this host: prev %+v err %v", prev, err)
	}
	// Another boot id: the pid says nothing, the TTL decides.
	tk2 := newTask(t, s, "/r", "g2")
	dead[1003] = true
	acquire(t, s, tk2.ID, holderC, time.Hour)
	if _, _, err := s.Acquire(ctx, tk2.ID, holderB, time.Hour); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("over a pid of another boot: %v, want ErrLeaseHeld", err)
	}
	// Same boot id, another host (containers share the boot id): TTL only.
	tk3 := newTask(t, s, "/r", "g3")
	box := ledger.Holder{Owner: "box", Host: "container-1", PID: 1001, BootID: "boot-1"}
	acquire(t, s, tk3.ID, box, time.Hour)
	if _, _, err := s.Acquire(ctx, tk3.ID, holderB, time.Hour); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("over a dead pid of another host with the same boot id: %v, want ErrLeaseHeld", err)
	}
	// ClaimNext applies the same rule.
	tk4 := newTask(t, s, "/r", "g4")
	acquire(t, s, tk4.ID, ledger.Holder{Owner: "D", Host: "h1", PID: 1001, BootID: "boot-1"}, time.Hour)
	l, prev, err := s.ClaimNext(ctx, holderB, time.Hour)
	if err != nil || l.TaskID != tk4.ID || prev == nil || prev.Owner != "D" {
		t.Fatalf("ClaimNext over a dead local pid: %+v prev %+v err %v", l, prev, err)
	}
	if _, _, err := s.ClaimNext(ctx, holderB, time.Hour); !errors.Is(err, ledger.ErrNothingRunnable) {
		t.Fatalf("ClaimNext with only live or foreign leases left: %v", err)
	}
}

func testFencingEveryWrite(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	old := acquire(t, s, tk.ID, holderC, time.Second)
	att := must[*engine.Attempt](t)(s.StartAttempt(ctx, old, tk.ID))
	c.Advance(2 * time.Second)
	cur := acquire(t, s, tk.ID, holderA, time.Minute)
	if cur.Fence <= old.Fence {
		t.Fatalf("fence did not grow: %d then %d", old.Fence, cur.Fence)
	}
	before := must[[]engine.Event](t)(s.Events(ctx, tk.ID, 0, 0))
	writes := map[string]error{}
	_, writes["Append"] = s.Append(ctx, &old, &engine.Event{TaskID: tk.ID, Kind: "x"})
	tk.Status = engine.TaskFailed
	writes["UpdateTask"] = s.UpdateTask(ctx, old, tk)
	_, writes["StartAttempt"] = s.StartAttempt(ctx, old, tk.ID)
	writes["FinishAttempt"] = s.FinishAttempt(ctx, old, att)
	_, writes["InterruptOrphans"] = s.InterruptOrphans(ctx, old, tk.ID)
	_, writes["RecordModelCall"] = s.RecordModelCall(ctx, old, &engine.ModelCall{Model: "m"})
	_, writes["Heartbeat"] = s.Heartbeat(ctx, old, time.Minute)
	writes["AcquireSession"] = s.AcquireSession(ctx, old, "http://gpu")
	writes["Release"] = s.Release(ctx, old)
	for op, err := range writes {
		if !errors.Is(err, engine.ErrFenced) {
			t.Errorf("%s under a stale fence: %v, want ErrFenced", op, err)
		}
	}
	after := must[[]engine.Event](t)(s.Events(ctx, tk.ID, 0, 0))
	if len(after) != len(before) {
		t.Errorf("fenced-out writes added events: %d then %d", len(before), len(after))
	}
	if got := must[*engine.Task](t)(s.Task(ctx, tk.ID)); got.Status != engine.TaskQueued {
		t.Errorf("fenced-out UpdateTask changed the status to %s", got.Status)
	}
	if n := len(must[[]engine.Attempt](t)(s.Attempts(ctx, tk.ID))); n != 1 {
		t.Errorf("%d attempts after a fenced-out StartAttempt", n)
	}
	if n := len(must[[]engine.ModelCall](t)(s.ModelCalls(ctx, tk.ID))); n != 0 {
		t.Errorf("%d model calls after a fenced-out RecordModelCall", n)
	}
	if l := must[*engine.Lease](t)(s.Lease(ctx, tk.ID)); l == nil || l.Fence != cur.Fence {
		t.Errorf("lease after fenced-out writes: %+v", l)
	}
	// The current holder writes.
	if _, err := s.Append(ctx, &cur, &engine.Event{TaskID: tk.ID, Kind: "y"}); err != nil {
		t.Fatal(err)
	}
}

func testAttempts(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	l1 := acquire(t, s, tk.ID, holderC, time.Second)
	a1 := must[*engine.Attempt](t)(s.StartAttempt(ctx, l1, tk.ID))
	if a1.Number != 1 || a1.Fence != l1.Fence || a1.Status != engine.AttemptRunning {
		t.Fatalf("first attempt %+v", a1)
	}
	a1.Verdict, a1.Note = "green", "try the other branch"
	if err := s.FinishAttempt(ctx, l1, a1); err != nil {
		t.Fatal(err)
	}
	if a1.Status != engine.AttemptFinished || a1.FinishedAt == nil {
		t.Fatalf("finished attempt %+v", a1)
	}
	if err := s.FinishAttempt(ctx, l1, a1); err == nil {
		t.Fatal("finishing a finished attempt succeeded")
	}
	a2 := must[*engine.Attempt](t)(s.StartAttempt(ctx, l1, tk.ID))
	if a2.Number != 2 {
		t.Fatalf("second attempt number %d", a2.Number)
	}
	c.Advance(2 * time.Second)
	l2 := acquire(t, s, tk.ID, holderA, time.Minute)
	if err := s.FinishAttempt(ctx, l2, a2); err == nil {
		t.Fatal("a new holder finished the previous holder's attempt")
	}
	orphans := must[[]engine.Attempt](t)(s.InterruptOrphans(ctx, l2, tk.ID))
	if len(orphans) != 1 || orphans[0].Number != 2 || orphans[0].Status != engine.AttemptInterrupted || orphans[0].FinishedAt == nil {
		t.Fatalf("orphans %+v", orphans)
	}
	if again := must[[]engine.Attempt](t)(s.InterruptOrphans(ctx, l2, tk.ID)); len(again) != 0 {
		t.Fatalf("orphans twice: %+v", again)
	}
	a3 := must[*engine.Attempt](t)(s.StartAttempt(ctx, l2, tk.ID))
	a3.Status = engine.AttemptInterrupted
	if err := s.FinishAttempt(ctx, l2, a3); err != nil {
		t.Fatal(err)
	}
	all := must[[]engine.Attempt](t)(s.Attempts(ctx, tk.ID))
	if len(all) != 3 || all[0].Verdict != "green" || all[0].Note != "try the other branch" || all[1].Status != engine.AttemptInterrupted ||
		all[2].Number != 3 || all[2].Fence != l2.Fence || all[2].Status != engine.AttemptInterrupted {
		t.Fatalf("attempts %+v", all)
	}
	bad := *a3
	bad.Status = "weird"
	if err := s.FinishAttempt(ctx, l2, &bad); err == nil {
		t.Fatal("FinishAttempt with an unknown status succeeded")
	}
}

func testEvents(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	other := newTask(t, s, "/r", "o")
	l := acquire(t, s, tk.ID, holderA, time.Minute)
	var last int64
	for i := range 10 {
		c.Advance(time.Millisecond)
		e := &engine.Event{TaskID: tk.ID, Kind: "k", Attempt: int64(i + 1), Data: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))}
		seq, err := s.Append(ctx, &l, e)
		if err != nil {
			t.Fatal(err)
		}
		if seq <= last || e.Seq != seq || e.Fence != l.Fence || !e.At.Equal(c.Now()) {
			t.Fatalf("Append %d: seq %d after %d, event %+v", i, seq, last, e)
		}
		last = seq
	}
	// A user's command appends without a lease.
	u := &engine.Event{TaskID: other.ID, Kind: "user.note"}
	if _, err := s.Append(ctx, nil, u); err != nil || u.Fence != 0 || u.Seq <= last {
		t.Fatalf("unfenced Append: %+v %v", u, err)
	}
	for _, bad := range []*engine.Event{nil, {TaskID: tk.ID}, {Kind: "k"}, {TaskID: tk.ID, Kind: "k", Data: json.RawMessage(`{nope`)}} {
		if _, err := s.Append(ctx, &l, bad); err == nil {
			t.Errorf("Append(%+v) succeeded", bad)
		}
	}
	if _, err := s.Append(ctx, nil, &engine.Event{TaskID: "nosuch", Kind: "k"}); err == nil {
		t.Error("Append to a missing task succeeded")
	}
	if _, err := s.Append(ctx, &l, &engine.Event{TaskID: other.ID, Kind: "k"}); err == nil {
		t.Error("Append to another task under this lease succeeded")
	}
	evs := must[[]engine.Event](t)(s.Events(ctx, tk.ID, 0, 0))
	if len(evs) != 11 || evs[0].Kind != "task.created" || string(evs[3].Data) != `{"i": 2}` || evs[3].Attempt != 3 {
		t.Fatalf("events: %d, %+v", len(evs), evs[3])
	}
	page := must[[]engine.Event](t)(s.Events(ctx, tk.ID, evs[4].Seq, 3))
	if len(page) != 3 || page[0].Seq != evs[5].Seq || page[2].Seq != evs[7].Seq {
		t.Fatalf("page after seq %d: %+v", evs[4].Seq, page)
	}
	all := must[[]engine.Event](t)(s.Events(ctx, "", 0, 0))
	if len(all) != 13 {
		t.Fatalf("every task's events: %d, want 13", len(all))
	}
	latest, older, err := s.LatestEvents(ctx, tk.ID, 0, 4)
	if err != nil || len(latest) != 4 || older != 7 || latest[3].Seq != evs[10].Seq || latest[0].Seq != evs[7].Seq {
		t.Fatalf("LatestEvents: %d events, %d older, %v", len(latest), older, err)
	}
	if _, _, err := s.LatestEvents(ctx, tk.ID, 0, 0); err == nil {
		t.Fatal("LatestEvents with limit 0 succeeded")
	}
}

// testNewestEvents: the newest event of each task of a repository (or of
// every task) is the one LatestEvents(id, 0, 1) reads, field for field,
// with events of several tasks interleaved.
func testNewestEvents(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	busy := newTask(t, s, "/r", "busy")
	quiet := newTask(t, s, "/r", "quiet") // only its task.created event
	elsewhere := newTask(t, s, "/s", "elsewhere")
	l := acquire(t, s, busy.ID, holderA, time.Minute)
	for i := range 6 {
		c.Advance(time.Millisecond)
		must[int64](t)(s.Append(ctx, &l, &engine.Event{TaskID: busy.ID, Kind: "k", Attempt: int64(i + 1), Data: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))}))
		must[int64](t)(s.Append(ctx, nil, &engine.Event{TaskID: elsewhere.ID, Kind: "user.note"}))
	}
	want := func(id string) engine.Event {
		t.Helper()
		evs, _, err := s.LatestEvents(ctx, id, 0, 1)
		if err != nil || len(evs) != 1 {
			t.Fatalf("LatestEvents(%s, 0, 1): %+v, %v", id, evs, err)
		}
		return evs[0]
	}
	same := func(a, b engine.Event) bool {
		return a.Seq == b.Seq && a.TaskID == b.TaskID && a.Attempt == b.Attempt && a.Fence == b.Fence &&
			a.Kind == b.Kind && string(a.Data) == string(b.Data) && a.At.Equal(b.At)
	}
	for _, tc := range []struct {
		repo  string
		tasks []string
	}{
		{"/r", []string{busy.ID, quiet.ID}},
		{"/s", []string{elsewhere.ID}},
		{"", []string{busy.ID, quiet.ID, elsewhere.ID}},
		{"/none", nil},
	} {
		got, err := s.NewestEvents(ctx, tc.repo)
		if err != nil || len(got) != len(tc.tasks) {
			t.Fatalf("NewestEvents(%q): %d events, %v; want %d", tc.repo, len(got), err, len(tc.tasks))
		}
		for _, id := range tc.tasks {
			if w := want(id); !same(got[id], w) {
				t.Fatalf("NewestEvents(%q)[%s] = %+v, want %+v", tc.repo, id, got[id], w)
			}
		}
	}
	if got := must[map[string]engine.Event](t)(s.NewestEvents(ctx, "/r")); got[busy.ID].Fence != l.Fence || string(got[busy.ID].Data) != `{"i": 5}` || got[quiet.ID].Kind != "task.created" {
		t.Fatalf("NewestEvents(/r): %+v", got)
	}
}

// testSumEvents: the count and sum the database computes over a task's
// events of one kind are the ones Go's json.Unmarshal into an int field
// gives over the same data, for well-formed and malformed data alike.
func testSumEvents(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	other := newTask(t, s, "/r", "o")
	const kind engine.EventKind = "turn.finished"
	datas := []string{
		`{"turn": 1, "tokens": 10}`,
		`{"tokens": 7, "summary": "s", "skipped": [{"path": "x"}]}`,
		`{"turn": 3}`,
		`{"tokens": null}`,
		`{"tokens": -2}`,
		`{"tokens": 4000000000000000000}`,
		`{"tokens": 1.5}`,
		`{"tokens": 1e3}`,
		`{"tokens": "12"}`,
		`{"tokens": true}`,
		`{"tokens": {"n": 1}}`,
		`{"tokens": 99999999999999999999}`,
		`[1, 2]`,
		`"text"`,
		`null`,
		``,
	}
	var (
		wantN   int
		wantSum int64
	)
	for _, d := range datas {
		var data json.RawMessage
		if d != "" {
			data = json.RawMessage(d)
		}
		must[int64](t)(s.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: kind, Data: data}))
	}
	// Another kind and another task's events are not counted.
	must[int64](t)(s.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "agent.observation", Data: json.RawMessage(`{"tokens": 100}`)}))
	must[int64](t)(s.Append(ctx, nil, &engine.Event{TaskID: other.ID, Kind: kind, Data: json.RawMessage(`{"tokens": 1000}`)}))
	// What a reader of the log computes (task.UsageOf does this).
	for _, ev := range must[[]engine.Event](t)(s.Events(ctx, tk.ID, 0, 0)) {
		var v struct {
			Tokens int `json:"tokens"`
		}
		if ev.Kind == kind && json.Unmarshal(ev.Data, &v) == nil {
			wantN++
			wantSum += int64(v.Tokens)
		}
	}

	n, sum, err := s.SumEvents(ctx, tk.ID, kind, "tokens")
	if err != nil || n != wantN || sum != wantSum {
		t.Fatalf("SumEvents: %d events summing %d, %v; Go's decoder counts %d summing %d", n, sum, err, wantN, wantSum)
	}
	if n, sum, err := s.SumEvents(ctx, "nosuch", kind, "tokens"); err != nil || n != 0 || sum != 0 {
		t.Fatalf("SumEvents of no task: %d, %d, %v", n, sum, err)
	}
	for _, bad := range []string{"", "a.b", "$", "a'b", "a b"} {
		if _, _, err := s.SumEvents(ctx, tk.ID, kind, bad); err == nil {
			t.Errorf("SumEvents with field %q succeeded", bad)
		}
	}
}

// testTaskVerifications: a task's gate runs, newest first, whatever
// repository they name, and none of another task's or of no task's.
func testTaskVerifications(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	other := newTask(t, s, "/r", "o")
	var mine []int64
	for _, v := range []*engine.VerificationRun{
		{TaskID: tk.ID, Attempt: 1, Repo: "/r", Base: "b", Head: "h1", Verdict: "failed", Report: json.RawMessage(`{"n":1}`)},
		{Repo: "/r", Base: "b", Head: "h", Verdict: "verified"},
		{TaskID: other.ID, Attempt: 1, Repo: "/r", Base: "b", Head: "o1", Verdict: "verified"},
		{TaskID: tk.ID, Attempt: 2, Repo: "/r", Base: "b", Head: "h2", Verdict: "verified", DurationMS: 7},
		{TaskID: tk.ID, Attempt: 3, Repo: "/elsewhere", Base: "b", Head: "h3", Verdict: "green"},
	} {
		id := must[int64](t)(s.RecordVerification(ctx, v))
		if v.TaskID == tk.ID {
			mine = append(mine, id)
		}
	}
	runs := must[[]engine.VerificationRun](t)(s.TaskVerifications(ctx, tk.ID, 0))
	if len(runs) != 3 || runs[0].ID != mine[2] || runs[1].ID != mine[1] || runs[2].ID != mine[0] {
		t.Fatalf("TaskVerifications(all): %+v, want ids %v newest first", runs, mine)
	}
	if r := runs[1]; r.TaskID != tk.ID || r.Attempt != 2 || r.Repo != "/r" || r.Head != "h2" || r.Verdict != "verified" || r.DurationMS != 7 || r.At.IsZero() {
		t.Fatalf("TaskVerifications run: %+v", r)
	}
	if string(runs[2].Report) != `{"n":1}` {
		t.Fatalf("TaskVerifications report: %q", runs[2].Report)
	}
	if r := must[[]engine.VerificationRun](t)(s.TaskVerifications(ctx, tk.ID, 1)); len(r) != 1 || r[0].ID != mine[2] {
		t.Fatalf("TaskVerifications(limit 1): %+v", r)
	}
	if r := must[[]engine.VerificationRun](t)(s.TaskVerifications(ctx, "nosuch", 0)); len(r) != 0 {
		t.Fatalf("TaskVerifications of no task's runs: %+v", r)
	}
}

func testRecords(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	v1 := &engine.VerificationRun{Repo: "/r", Base: "b", Head: "h", Verdict: "verified", Report: json.RawMessage(`{"ok":true}`), DurationMS: 12}
	if _, err := s.RecordVerification(ctx, v1); err != nil || v1.ID == 0 || !v1.At.Equal(c.Now()) {
		t.Fatalf("RecordVerification: %+v %v", v1, err)
	}
	v2 := &engine.VerificationRun{TaskID: tk.ID, Attempt: 4, Repo: "/other", Base: "b", Head: "h2", Verdict: "green"}
	must[int64](t)(s.RecordVerification(ctx, v2))
	if _, err := s.RecordVerification(ctx, &engine.VerificationRun{Repo: "/r"}); err == nil {
		t.Fatal("a run without a verdict was stored")
	}
	runs := must[[]engine.VerificationRun](t)(s.Verifications(ctx, "", 0))
	if len(runs) != 2 || runs[0].ID != v2.ID || runs[0].TaskID != tk.ID || runs[0].Attempt != 4 || string(runs[1].Report) != `{"ok":true}` {
		t.Fatalf("Verifications: %+v", runs)
	}
	if r := must[[]engine.VerificationRun](t)(s.Verifications(ctx, "/r", 1)); len(r) != 1 || r[0].ID != v1.ID {
		t.Fatalf("Verifications(/r, 1): %+v", r)
	}
	l := acquire(t, s, tk.ID, holderA, time.Minute)
	call := &engine.ModelCall{Endpoint: "http://gpu", Model: "qwen", PromptTokens: 10, CompletionTokens: 5, DurationMS: 40,
		Timings: json.RawMessage(`{"predicted_ms":1.5}`), Attempt: 2}
	if _, err := s.RecordModelCall(ctx, l, call); err != nil || call.ID == 0 || call.TaskID != tk.ID {
		t.Fatalf("RecordModelCall: %+v %v", call, err)
	}
	must[int64](t)(s.RecordModelCall(ctx, l, &engine.ModelCall{Model: "qwen", Error: "timeout"}))
	if _, err := s.RecordModelCall(ctx, l, &engine.ModelCall{}); err == nil {
		t.Fatal("a call naming no endpoint or model was stored")
	}
	calls := must[[]engine.ModelCall](t)(s.ModelCalls(ctx, tk.ID))
	if len(calls) != 2 || calls[0].PromptTokens != 10 || string(calls[0].Timings) != `{"predicted_ms":1.5}` || calls[0].Attempt != 2 || calls[1].Error != "timeout" {
		t.Fatalf("ModelCalls: %+v", calls)
	}
}

func testClaimNext(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	if _, _, err := s.ClaimNext(ctx, holderA, time.Minute); !errors.Is(err, ledger.ErrNothingRunnable) {
		t.Fatalf("ClaimNext on an empty ledger: %v", err)
	}
	if _, _, err := s.ClaimNext(ctx, holderA, 0); err == nil {
		t.Fatal("ClaimNext with ttl 0 succeeded")
	}
	done := newTask(t, s, "/r", "done")
	l := acquire(t, s, done.ID, holderA, time.Minute)
	done.Status = engine.TaskVerified
	if err := s.UpdateTask(ctx, l, done); err != nil {
		t.Fatal(err)
	}
	ok(t, s.Release(ctx, l))
	c.Advance(time.Second)
	first := newTask(t, s, "/r", "first")
	c.Advance(time.Second)
	second := newTask(t, s, "/r", "second")
	c.Advance(time.Second)
	third := newTask(t, s, "/r", "third")
	// third is held by a live runner on another machine.
	held := acquire(t, s, third.ID, holderC, 10*time.Second)

	la, prev, err := s.ClaimNext(ctx, holderA, time.Minute)
	if err != nil || la.TaskID != first.ID || prev != nil || la.Fence != 1 {
		t.Fatalf("first claim: %+v prev %+v %v", la, prev, err)
	}
	lb, _, err := s.ClaimNext(ctx, holderB, time.Minute)
	if err != nil || lb.TaskID != second.ID {
		t.Fatalf("second claim: %+v %v", lb, err)
	}
	if _, _, err := s.ClaimNext(ctx, holderA, time.Minute); !errors.Is(err, ledger.ErrNothingRunnable) {
		t.Fatalf("with every runnable task held: %v", err)
	}
	// The other machine's runner stalls past its TTL: its task is claimable.
	c.Advance(11 * time.Second)
	lc, prev, err := s.ClaimNext(ctx, holderA, time.Minute)
	if err != nil || lc.TaskID != third.ID || prev == nil || prev.Owner != "C" || lc.Fence != held.Fence+1 {
		t.Fatalf("claim over an expired lease: %+v prev %+v %v", lc, prev, err)
	}
	// A task left running by a holder that released without finishing is runnable.
	running := newTask(t, s, "/r", "running")
	lr := acquire(t, s, running.ID, holderB, time.Minute)
	running.Status = engine.TaskRunning
	ok(t, s.UpdateTask(ctx, lr, running))
	ok(t, s.Release(ctx, lr))
	ld, _, err := s.ClaimNext(ctx, holderC, time.Minute)
	if err != nil || ld.TaskID != running.ID || ld.Fence != lr.Fence+1 {
		t.Fatalf("claim of a released running task: %+v %v", ld, err)
	}
}

// handles opens n handles on one ledger with a shared clock.
func handles(t *testing.T, b Backend, n int) ([]ledger.Store, *Clock) {
	c := NewClock()
	open := b(t)
	out := make([]ledger.Store, n)
	for i := range out {
		out[i] = open(Options{Now: c.Now, Alive: allAlive})
	}
	return out, c
}

func testClaimRace(t *testing.T, b Backend) {
	ctx := context.Background()
	const runners, tasks = 8, 40
	hs, _ := handles(t, b, runners)
	for i := range tasks {
		newTask(t, hs[i%runners], "/r", fmt.Sprint("t", i))
	}
	var (
		mu      sync.Mutex
		claimed = map[string][]string{}
		wg      sync.WaitGroup
		errs    = make(chan error, runners)
	)
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := ledger.Holder{Owner: fmt.Sprint("runner-", i), Host: "h", PID: 5000 + i, BootID: "boot-x"}
			for {
				l, _, err := hs[i].ClaimNext(ctx, h, time.Hour)
				if errors.Is(err, ledger.ErrNothingRunnable) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				claimed[l.TaskID] = append(claimed[l.TaskID], h.Owner)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(claimed) != tasks {
		t.Fatalf("%d of %d tasks claimed", len(claimed), tasks)
	}
	for id, by := range claimed {
		if len(by) != 1 {
			t.Errorf("task %s claimed by %v", id, by)
		}
	}
}

func testAcquireRace(t *testing.T, b Backend) {
	ctx := context.Background()
	const n = 8
	hs, _ := handles(t, b, n)
	tk := newTask(t, hs[0], "/r", "g")
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []engine.Lease
		refuse int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := ledger.Holder{Owner: fmt.Sprint("r", i), Host: "h", PID: 100 + i, BootID: "b"}
			l, _, err := hs[i].Acquire(ctx, tk.ID, h, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, l)
			case errors.Is(err, engine.ErrLeaseHeld):
				refuse++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || refuse != n-1 || won[0].Fence != 1 {
		t.Fatalf("%d acquired (%+v), %d refused", len(won), won, refuse)
	}
}

// testTakeoverDuringWrites: a holder appends as fast as it can while
// another handle takes its lease over after expiry. Once the new fence has
// written, no write of the old fence may land: in seq order, fences never
// go down, and the old holder learns it was fenced.
func testTakeoverDuringWrites(t *testing.T, b Backend) {
	ctx := context.Background()
	hs, c := handles(t, b, 2)
	tk := newTask(t, hs[0], "/r", "g")
	old := acquire(t, hs[0], tk.ID, holderC, time.Second)
	stop := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				result <- errors.New("the old holder was never fenced")
				return
			default:
			}
			if _, err := hs[0].Append(ctx, &old, &engine.Event{TaskID: tk.ID, Kind: "old"}); err != nil {
				result <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	c.Advance(2 * time.Second)
	cur := acquire(t, hs[1], tk.ID, holderA, time.Minute)
	for range 20 {
		if _, err := hs[1].Append(ctx, &cur, &engine.Event{TaskID: tk.ID, Kind: "new"}); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	select {
	case err = <-result:
	case <-time.After(30 * time.Second):
		close(stop)
		err = <-result
	}
	if !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("the old holder ended with %v, want ErrFenced", err)
	}
	evs := must[[]engine.Event](t)(hs[1].Events(ctx, tk.ID, 0, 0))
	var maxFence int64
	olds := 0
	for _, e := range evs {
		if e.Fence < maxFence {
			t.Fatalf("event %d of fence %d after fence %d wrote", e.Seq, e.Fence, maxFence)
		}
		maxFence = max(maxFence, e.Fence)
		if e.Kind == "old" {
			olds++
		}
	}
	if olds == 0 {
		t.Fatal("the old holder wrote nothing before the takeover: the race was not exercised")
	}
}

func testEndpointSessions(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	const gpu = "http://gpu:8080"
	var leases []engine.Lease
	for i := range 4 {
		tk := newTask(t, s, "/r", fmt.Sprint("g", i))
		h := ledger.Holder{Owner: fmt.Sprint("r", i), Host: "h", PID: 10 + i, BootID: "b"}
		leases = append(leases, acquire(t, s, tk.ID, h, 10*time.Second))
	}
	// No limit recorded: always room.
	for _, l := range leases {
		if err := s.AcquireSession(ctx, l, "http://unlimited"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetEndpointLimit(ctx, gpu, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.AcquireSession(ctx, leases[0], gpu); err != nil {
		t.Fatal(err)
	}
	if err := s.AcquireSession(ctx, leases[0], gpu); err != nil {
		t.Fatalf("re-acquiring a held slot: %v", err)
	}
	if err := s.AcquireSession(ctx, leases[1], gpu); err != nil {
		t.Fatal(err)
	}
	if err := s.AcquireSession(ctx, leases[2], gpu); !errors.Is(err, ledger.ErrEndpointBusy) {
		t.Fatalf("third session on a limit of 2: %v, want ErrEndpointBusy", err)
	}
	if held, limit, err := s.EndpointSessions(ctx, gpu); err != nil || held != 2 || limit != 2 {
		t.Fatalf("EndpointSessions: %d of %d, %v", held, limit, err)
	}
	if err := s.ReleaseSession(ctx, leases[0], gpu); err != nil {
		t.Fatal(err)
	}
	if err := s.AcquireSession(ctx, leases[2], gpu); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	// A holder that dies keeps its slot only while its lease lives.
	c.Advance(5 * time.Second)
	leases[2] = must[engine.Lease](t)(s.Heartbeat(ctx, leases[2], 10*time.Second))
	leases[3] = must[engine.Lease](t)(s.Heartbeat(ctx, leases[3], 20*time.Second))
	c.Advance(6 * time.Second) // leases[1] expired with its slot; leases[2] and [3] renewed
	if held, _, _ := s.EndpointSessions(ctx, gpu); held != 1 {
		t.Fatalf("held %d slots, want 1: an expired lease's slot still counts", held)
	}
	if err := s.AcquireSession(ctx, leases[3], gpu); err != nil {
		t.Fatalf("with one holder's lease expired: %v", err)
	}
	// A takeover frees the old fence's slot, even before that lease's expiry
	// would have: the slot is the fence's, not the task's.
	c.Advance(5 * time.Second) // leases[2] expires
	taken := acquire(t, s, leases[2].TaskID, holderC, time.Minute)
	if held, _, _ := s.EndpointSessions(ctx, gpu); held != 1 {
		t.Fatalf("held %d slots after a takeover, want 1 (leases[3]'s)", held)
	}
	if err := s.AcquireSession(ctx, taken, gpu); err != nil {
		t.Fatalf("the new holder of a taken-over task: %v", err)
	}
	if err := s.AcquireSession(ctx, leases[0], gpu); !errors.Is(err, ledger.ErrEndpointBusy) {
		t.Fatalf("a third session: %v", err)
	}
	if err := s.SetEndpointLimit(ctx, gpu, 0); err != nil {
		t.Fatal(err)
	}
	if _, limit, _ := s.EndpointSessions(ctx, gpu); limit != 0 {
		t.Fatalf("limit %d after removing it", limit)
	}
}

func testEndpointSessionRace(t *testing.T, b Backend) {
	ctx := context.Background()
	const n, limit = 8, 3
	hs, _ := handles(t, b, n)
	const gpu = "http://gpu"
	if err := hs[0].SetEndpointLimit(ctx, gpu, limit); err != nil {
		t.Fatal(err)
	}
	leases := make([]engine.Lease, n)
	for i := range n {
		tk := newTask(t, hs[0], "/r", fmt.Sprint("g", i))
		leases[i] = acquire(t, hs[0], tk.ID, ledger.Holder{Owner: fmt.Sprint("r", i), Host: "h", PID: 10 + i, BootID: "b"}, time.Hour)
	}
	var (
		wg           sync.WaitGroup
		mu           sync.Mutex
		inUse, peak  int
		sessionsDone int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 5; {
				err := hs[i].AcquireSession(ctx, leases[i], gpu)
				if errors.Is(err, ledger.ErrEndpointBusy) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inUse++
				peak = max(peak, inUse)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				inUse--
				sessionsDone++
				mu.Unlock()
				if err := hs[i].ReleaseSession(ctx, leases[i], gpu); err != nil {
					t.Error(err)
					return
				}
				round++
			}
		}()
	}
	wg.Wait()
	if peak > limit || sessionsDone != 5*n {
		t.Fatalf("peak %d sessions at once on a limit of %d; %d sessions done", peak, limit, sessionsDone)
	}
	t.Logf("%d sessions through %d slots, peak %d", sessionsDone, limit, peak)
}

func testReopen(t *testing.T, b Backend) {
	ctx := context.Background()
	c := NewClock()
	open := b(t)
	s1 := open(Options{Now: c.Now, Alive: allAlive})
	tk := newTask(t, s1, "/r", "g")
	l := acquire(t, s1, tk.ID, holderA, time.Minute)
	if _, err := s1.Append(ctx, &l, &engine.Event{TaskID: tk.ID, Kind: "k", Data: json.RawMessage(`[1,2]`)}); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(Options{Now: c.Now, Alive: allAlive})
	got := must[*engine.Lease](t)(s2.Lease(ctx, tk.ID))
	if got == nil || *got != l {
		t.Fatalf("lease after reopening: %+v, want %+v", got, l)
	}
	evs := must[[]engine.Event](t)(s2.Events(ctx, tk.ID, 0, 0))
	if len(evs) != 2 || string(evs[1].Data) != `[1,2]` {
		t.Fatalf("events after reopening: %+v", evs)
	}
	if _, err := s2.Append(ctx, &l, &engine.Event{TaskID: tk.ID, Kind: "k2"}); err != nil {
		t.Fatalf("the holder writes through a new handle: %v", err)
	}
}
