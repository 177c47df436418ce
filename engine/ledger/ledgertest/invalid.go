package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// testInvalidArguments: every backend refuses the same malformed calls
// with the same message, an error wrapping ledger.ErrInvalid, and writes
// nothing for them (the task's log and attempts are as before).
func testInvalidArguments(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := open1(t, b)
	tk := newTask(t, s, "/r", "goal")
	other := newTask(t, s, "/r", "another goal")
	lease := acquire(t, s, tk.ID, holderA, time.Minute)
	att := must[*engine.Attempt](t)(s.StartAttempt(ctx, lease, tk.ID))
	evsBefore := must[[]engine.Event](t)(s.Events(ctx, "", 0, 0))
	bad := json.RawMessage(`{"open":`)

	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"CreateTask nil", func() error { return s.CreateTask(ctx, nil) }, "CreateTask: task is nil"},
		{"CreateTask no goal", func() error { return s.CreateTask(ctx, &engine.Task{Repo: "/r", Goal: " \t"}) }, "CreateTask: the task has no goal"},
		{"CreateTask no repo", func() error { return s.CreateTask(ctx, &engine.Task{Goal: "g"}) }, "CreateTask: the task has no repo"},
		{"CreateTask status", func() error { return s.CreateTask(ctx, &engine.Task{Repo: "/r", Goal: "g", Status: "sleeping"}) }, `CreateTask: unknown task status "sleeping"`},
		{"UpdateTask nil", func() error { return s.UpdateTask(ctx, lease, nil) }, "UpdateTask: task is nil"},
		{"UpdateTask other task", func() error { return s.UpdateTask(ctx, lease, other) }, `UpdateTask: task "` + other.ID + `" is not the leased task "` + tk.ID + `"`},
		{"UpdateTask status", func() error {
			c := *tk
			c.Status = "sleeping"
			return s.UpdateTask(ctx, lease, &c)
		}, `UpdateTask: unknown task status "sleeping"`},
		{"Acquire ttl", func() error { _, _, err := s.Acquire(ctx, other.ID, holderB, 0); return err }, "Acquire: ttl 0s is not positive"},
		{"Acquire owner", func() error { _, _, err := s.Acquire(ctx, other.ID, ledger.Holder{}, time.Minute); return err }, "Acquire: the holder has no owner"},
		{"ClaimNext ttl", func() error { _, _, err := s.ClaimNext(ctx, holderB, -time.Second); return err }, "ClaimNext: ttl -1s is not positive"},
		{"ClaimNext owner", func() error { _, _, err := s.ClaimNext(ctx, ledger.Holder{}, time.Minute); return err }, "ClaimNext: the holder has no owner"},
		{"Heartbeat ttl", func() error { _, err := s.Heartbeat(ctx, lease, 0); return err }, "Heartbeat: ttl 0s is not positive"},
		{"StartAttempt other task", func() error { _, err := s.StartAttempt(ctx, lease, other.ID); return err }, `StartAttempt: task "` + other.ID + `" is not the leased task "` + tk.ID + `"`},
		{"FinishAttempt nil", func() error { return s.FinishAttempt(ctx, lease, nil) }, "FinishAttempt: attempt is nil"},
		{"FinishAttempt other task", func() error {
			a := *att
			a.TaskID = other.ID
			return s.FinishAttempt(ctx, lease, &a)
		}, `FinishAttempt: attempt of task "` + other.ID + `" under the lease of task "` + tk.ID + `"`},
		{"FinishAttempt status", func() error {
			a := *att
			a.Status = "paused"
			return s.FinishAttempt(ctx, lease, &a)
		}, `FinishAttempt: unknown attempt status "paused"`},
		{"InterruptOrphans other task", func() error { _, err := s.InterruptOrphans(ctx, lease, other.ID); return err }, `InterruptOrphans: task "` + other.ID + `" is not the leased task "` + tk.ID + `"`},
		{"Append nil", func() error { _, err := s.Append(ctx, nil, nil); return err }, "Append: event is nil"},
		{"Append no kind", func() error { _, err := s.Append(ctx, nil, &engine.Event{TaskID: tk.ID}); return err }, `Append: an event needs a task id and a kind (got task "` + tk.ID + `", kind "")`},
		{"Append no task", func() error { _, err := s.Append(ctx, nil, &engine.Event{Kind: "k"}); return err }, `Append: an event needs a task id and a kind (got task "", kind "k")`},
		{"Append other task", func() error {
			_, err := s.Append(ctx, &lease, &engine.Event{TaskID: other.ID, Kind: "k"})
			return err
		}, `Append: event of task "` + other.ID + `" under the lease of task "` + tk.ID + `"`},
		{"Append bad JSON", func() error {
			_, err := s.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "k", Data: bad})
			return err
		}, "event data is not valid JSON"},
		{"LatestEvents limit", func() error { _, _, err := s.LatestEvents(ctx, tk.ID, 0, 0); return err }, "ledger: LatestEvents needs a positive limit, got 0"},
		{"SumEvents field", func() error { _, _, err := s.SumEvents(ctx, tk.ID, "k", "a.b"); return err }, `ledger: SumEvents field "a.b" is not a plain key (letters, digits, underscores)`},
		{"RecordVerification nil", func() error { _, err := s.RecordVerification(ctx, nil); return err }, "RecordVerification: run is nil"},
		{"RecordVerification no verdict", func() error {
			_, err := s.RecordVerification(ctx, &engine.VerificationRun{Repo: "/r"})
			return err
		}, `RecordVerification: a run needs a repo and a verdict (got repo "/r", verdict "")`},
		{"RecordVerification bad JSON", func() error {
			_, err := s.RecordVerification(ctx, &engine.VerificationRun{Repo: "/r", Verdict: "verified", Report: bad})
			return err
		}, "verification report is not valid JSON"},
		{"RecordModelCall nil", func() error { _, err := s.RecordModelCall(ctx, lease, nil); return err }, "RecordModelCall: call is nil"},
		{"RecordModelCall other task", func() error {
			_, err := s.RecordModelCall(ctx, lease, &engine.ModelCall{TaskID: other.ID, Model: "m"})
			return err
		}, `RecordModelCall: call of task "` + other.ID + `" under the lease of task "` + tk.ID + `"`},
		{"RecordModelCall unnamed", func() error { _, err := s.RecordModelCall(ctx, lease, &engine.ModelCall{}); return err }, "RecordModelCall: the call names neither an endpoint nor a model"},
		{"RecordModelCall bad JSON", func() error {
			_, err := s.RecordModelCall(ctx, lease, &engine.ModelCall{Model: "m", Timings: bad})
			return err
		}, "model call timings is not valid JSON"},
		{"SetEndpointLimit empty", func() error { return s.SetEndpointLimit(ctx, "", 2) }, "SetEndpointLimit: the endpoint is empty"},
		{"AcquireSession empty", func() error { return s.AcquireSession(ctx, lease, "") }, "AcquireSession: the endpoint is empty"},
	}
	for _, c := range cases {
		err := c.call()
		if !errors.Is(err, ledger.ErrInvalid) || err.Error() != c.want {
			t.Errorf("%s: %v; want ledger.ErrInvalid saying %q", c.name, err, c.want)
		}
	}
	if evs := must[[]engine.Event](t)(s.Events(ctx, "", 0, 0)); len(evs) != len(evsBefore) {
		t.Errorf("the refused calls wrote %d events", len(evs)-len(evsBefore))
	}
	if atts := must[[]engine.Attempt](t)(s.Attempts(ctx, tk.ID)); len(atts) != 1 || atts[0].Status != engine.AttemptRunning {
		t.Errorf("attempts after the refused calls: %+v, want the one running", atts)
	}
	if calls := must[[]engine.ModelCall](t)(s.ModelCalls(ctx, tk.ID)); len(calls) != 0 {
		t.Errorf("the refused calls recorded %d model calls", len(calls))
	}
	if ts := must[[]engine.Task](t)(s.Tasks(ctx, "")); len(ts) != 2 {
		t.Errorf("%d tasks after the refused creations, want 2", len(ts))
	}
}
