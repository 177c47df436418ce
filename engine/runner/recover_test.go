package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/verify"
)

// recoveringAgent is the script agent with a Recover that records when it
// ran relative to the attempts.
type recoveringAgent struct {
	scriptAgent
	removed  int
	err      error
	log      []string
	fences   []int64
	ledgered bool
}

func (a *recoveringAgent) Recover(ctx context.Context, t engine.Task, lease engine.Lease) (int, error) {
	a.log = append(a.log, "recover")
	a.fences = append(a.fences, lease.Fence)
	return a.removed, a.err
}

func (a *recoveringAgent) StartAttempt(ctx context.Context, in AttemptInput) (Session, error) {
	a.log = append(a.log, "attempt")
	a.ledgered = in.Ledger != nil
	return a.scriptAgent.StartAttempt(ctx, in)
}

// ownerChecker records what each check was told about its owner.
type ownerChecker struct {
	fileChecker
	inputs []CheckInput
}

func (c *ownerChecker) Check(ctx context.Context, in CheckInput) (*verify.Report, error) {
	c.inputs = append(c.inputs, in)
	return c.fileChecker.Check(ctx, in)
}

// TestRecoverRunsFirst: a Recoverer agent cleans up once per run, after the
// lease is held and before any attempt; what it removed is an event; the
// checks are told the attempt number and fence (their sandbox's owner);
// the attempt gets the runner's ledger.
func TestRecoverRunsFirst(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, 3*time.Second)
	tk := createTask(t, e, newRepo(t, nil), engine.Budgets{MaxAttempts: 3, MaxTurns: 20})
	a := &recoveringAgent{scriptAgent: scriptAgent{doneAfter: 1}, removed: 2}
	c := &ownerChecker{}
	res, err := (&Runner{Engine: e, Agent: a, Checker: c}).Run(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != engine.TaskVerified {
		t.Fatalf("status %s (%s)", res.Task.Status, res.Task.Reason)
	}
	if got := strings.Join(a.log, " "); got != "recover attempt attempt" {
		t.Errorf("calls %q, want recover once, before the two attempts", got)
	}
	if len(a.fences) != 1 || a.fences[0] != res.Fence {
		t.Errorf("Recover saw fences %v, want the run's %d", a.fences, res.Fence)
	}
	if !a.ledgered {
		t.Error("AttemptInput.Ledger is nil")
	}
	if len(c.inputs) != 2 || c.inputs[0].Number != 1 || c.inputs[1].Number != 2 || c.inputs[1].Fence != res.Fence {
		t.Errorf("check inputs %+v, want attempts 1 and 2 under fence %d", c.inputs, res.Fence)
	}
	evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
	var reaped []int
	for _, ev := range evs {
		if ev.Kind == task.EventReaped {
			var d struct {
				Removed int `json:"removed"`
			}
			json.Unmarshal(ev.Data, &d)
			reaped = append(reaped, d.Removed)
		}
	}
	if len(reaped) != 1 || reaped[0] != 2 {
		t.Errorf("sandbox.reaped events %v, want one with 2 removed", reaped)
	}
}

// TestRecoverFailureStopsTheRun: when cleaning up fails (Docker is down),
// no attempt starts and the task says why.
func TestRecoverFailureStopsTheRun(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, 3*time.Second)
	tk := createTask(t, e, newRepo(t, nil), engine.Budgets{MaxAttempts: 3, MaxTurns: 20})
	a := &recoveringAgent{scriptAgent: scriptAgent{doneAfter: 1}, err: errors.New("docker: engine unreachable")}
	res, err := (&Runner{Engine: e, Agent: a, Checker: fileChecker{}}).Run(ctx, tk.ID)
	if err == nil || !strings.Contains(err.Error(), "cleaning up what an earlier runner") || !strings.Contains(err.Error(), "engine unreachable") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(strings.Join(a.log, " "), "attempt") {
		t.Errorf("an attempt started after the cleanup failed: %v", a.log)
	}
	if res == nil || res.Task.Status != engine.TaskFailed || !strings.Contains(res.Task.Reason, "engine unreachable") {
		t.Errorf("task after a failed cleanup: %+v", res)
	}
	if l, _ := e.Ledger.Lease(ctx, tk.ID); l != nil {
		t.Errorf("lease still held: %+v", l)
	}
}
