package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/verify"
)

// idleFirstAgent finishes its first attempt without touching a file; from
// the second on it writes fixed.txt, and records the history it was given.
type idleFirstAgent struct{ histories [][]engine.Attempt }

func (a *idleFirstAgent) StartAttempt(ctx context.Context, in AttemptInput) (Session, error) {
	a.histories = append(a.histories, in.History)
	return idleSession{in: in}, nil
}

type idleSession struct{ in AttemptInput }

func (s idleSession) Turn(ctx context.Context) (TurnResult, error) {
	if s.in.Attempt.Number == 1 {
		return TurnResult{Summary: "looked around", Done: true}, nil
	}
	err := os.WriteFile(filepath.Join(s.in.Worktree, "fixed.txt"), []byte("ok\n"), 0o644)
	return TurnResult{Summary: "wrote fixed.txt", Done: true}, err
}

func (idleSession) Close() error { return nil }

// countingChecker is fileChecker, counting its calls.
type countingChecker struct{ n atomic.Int32 }

func (c *countingChecker) Check(ctx context.Context, in CheckInput) (*verify.Report, error) {
	c.n.Add(1)
	return fileChecker{}.Check(ctx, in)
}

// TestAttemptWithoutChangeIsRecorded: an attempt whose agent finishes
// without changing a file is recorded as such (attempt.no_change, verdict
// no_change) without asking the gate, whose "pass --base REV" advice is
// for `bcode check`; the next attempt is given that attempt in its history
// with a note saying it changed nothing, and the task goes on to verified.
func TestAttemptWithoutChangeIsRecorded(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	e := newEngine(t, 3*time.Second)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 3, MaxTurns: 20})
	agent := &idleFirstAgent{}
	checks := &countingChecker{}
	res, err := (&Runner{Engine: e, Agent: agent, Checker: checks}).Run(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != engine.TaskVerified {
		t.Fatalf("status %s reason %q, want verified", res.Task.Status, res.Task.Reason)
	}
	if n := checks.n.Load(); n != 1 {
		t.Errorf("the gate ran %d times, want once (not for the attempt that changed nothing)", n)
	}
	atts, _ := e.Ledger.Attempts(ctx, tk.ID)
	if len(atts) != 2 || atts[0].Verdict != engine.AttemptNoChange || !strings.Contains(atts[0].Note, "without changing any file") {
		t.Fatalf("attempts %+v, want no_change with a note, then verified", atts)
	}
	if len(agent.histories) != 2 || len(agent.histories[1]) != 1 || agent.histories[1][0].Verdict != engine.AttemptNoChange ||
		!strings.Contains(agent.histories[1][0].Note, "must edit the code") {
		t.Errorf("the second attempt's history %+v does not say the first changed nothing", agent.histories)
	}
	evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
	var noChange int
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), "pass --base") {
			t.Errorf("event %s carries bcode check's advice: %s", ev.Kind, ev.Data)
		}
		if ev.Kind == task.EventNoChange {
			noChange++
		}
	}
	if noChange != 1 {
		t.Errorf("%d attempt.no_change events in %v, want 1", noChange, kinds(evs))
	}
}

// TestOnlyNoChangeAttemptsBlockOnTheBudget: a task whose every attempt
// changes nothing ends blocked on its attempt budget, and its reason never
// carries bcode check's flag.
func TestOnlyNoChangeAttemptsBlockOnTheBudget(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	e := newEngine(t, 3*time.Second)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 2, MaxTurns: 20})
	checks := &countingChecker{}
	res, err := (&Runner{Engine: e, Agent: noopAgent{}, Checker: checks}).Run(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != engine.TaskBlocked || strings.Contains(res.Task.Reason, "--base") || checks.n.Load() != 0 {
		t.Fatalf("status %s reason %q, %d checks: want blocked on the budget without a check", res.Task.Status, res.Task.Reason, checks.n.Load())
	}
	atts, _ := e.Ledger.Attempts(ctx, tk.ID)
	for _, a := range atts {
		if a.Verdict != engine.AttemptNoChange {
			t.Errorf("attempt %d verdict %q, want no_change", a.Number, a.Verdict)
		}
	}
}

type noopAgent struct{}

func (noopAgent) StartAttempt(ctx context.Context, in AttemptInput) (Session, error) {
	return idleSession{in: AttemptInput{Attempt: engine.Attempt{Number: 1}}}, nil
}
