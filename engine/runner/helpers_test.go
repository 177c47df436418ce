package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

// gitCmd runs git in dir as a user would, with an explicit identity.
func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return testrepo.Open(t, dir).Git(args...)
}

func gitOut(dir string, args ...string) (string, error) {
	out, err := testrepo.Command(dir, args...).CombinedOutput()
	return string(out), err
}

// newRepo makes a real repository with one commit on main.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	if files == nil {
		files = map[string]string{"README.md": "hello\n", "calc.txt": "one\ntwo\nthree\n"}
	}
	r := testrepo.Init(t, filepath.Join(t.TempDir(), "repo"))
	r.Write(files)
	r.Commit("base")
	return r.Dir
}

// newEngine opens a real ledger file in a fresh state dir.
func newEngine(t testing.TB, ttl time.Duration) *task.Engine {
	t.Helper()
	state := t.TempDir()
	led, err := ledger.Open(context.Background(), filepath.Join(state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	e := task.New(led)
	e.TTL = ttl
	e.Poll = 20 * time.Millisecond
	return e
}

// scriptAgent is the test agent: each turn appends a line to work.txt and
// writes turn-<attempt>-<turn>.txt (between the two, the crash point
// agent.mid-turn), then says done after doneAfter turns; block makes a
// turn wait for ctx after its first write.
type scriptAgent struct {
	doneAfter int
	stuckAt   int
	delay     time.Duration
	block     bool
	started   chan int // receives the turn number as a turn begins, if set
	tokens    int
}

func (a *scriptAgent) StartAttempt(ctx context.Context, in AttemptInput) (Session, error) {
	return &scriptSession{a: a, in: in}, nil
}

type scriptSession struct {
	a    *scriptAgent
	in   AttemptInput
	turn int
}

func (s *scriptSession) Turn(ctx context.Context) (TurnResult, error) {
	s.turn++
	if s.a.started != nil {
		select {
		case s.a.started <- s.turn:
		default:
		}
	}
	f, err := os.OpenFile(filepath.Join(s.in.Worktree, "work.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return TurnResult{}, err
	}
	fmt.Fprintf(f, "attempt %d turn %d\n", s.in.Attempt.Number, s.turn)
	f.Close()
	crashpoint.Hit("agent.mid-turn")
	if s.a.block {
		<-ctx.Done()
		return TurnResult{}, ctx.Err()
	}
	if s.a.delay > 0 {
		select {
		case <-ctx.Done():
			return TurnResult{}, ctx.Err()
		case <-time.After(s.a.delay):
		}
	}
	name := fmt.Sprintf("turn-%d-%d.txt", s.in.Attempt.Number, s.turn)
	if err := os.WriteFile(filepath.Join(s.in.Worktree, name), []byte(name+"\n"), 0o644); err != nil {
		return TurnResult{}, err
	}
	res := TurnResult{Summary: "wrote " + name, TokensUsed: s.a.tokens}
	if s.a.stuckAt > 0 && s.turn >= s.a.stuckAt {
		res.Stuck, res.Note = true, "cannot find the bug"
	}
	if s.a.doneAfter > 0 && s.turn >= s.a.doneAfter {
		res.Done = true
		if s.in.Attempt.Number >= 2 {
			os.WriteFile(filepath.Join(s.in.Worktree, "fixed.txt"), []byte("ok\n"), 0o644)
		}
	}
	return res, nil
}

func (s *scriptSession) Close() error { return nil }

// fileChecker stands in for the gate where the gate is not what is under
// test: the change is verified when the worktree's HEAD has fixed.txt (the
// script writes it from the second attempt on), failed otherwise.
type fileChecker struct{}

func (fileChecker) Check(ctx context.Context, in CheckInput) (*verify.Report, error) {
	out, err := gitOut(in.Worktree, "show", "HEAD:fixed.txt")
	if err == nil && strings.TrimSpace(out) == "ok" {
		return &verify.Report{Verdict: verify.Verified, Reasons: []verify.Reason{{Code: verify.ReasonCredited, Message: "fixed.txt says ok"}}}, nil
	}
	return &verify.Report{Verdict: verify.Failed, Reasons: []verify.Reason{{Code: verify.ReasonFailsOnHead, Message: "fixed.txt is missing"}}}, nil
}

func createTask(t testing.TB, e *task.Engine, repo string, b engine.Budgets) *engine.Task {
	t.Helper()
	tk, err := e.Create(context.Background(), task.CreateInput{Repo: repo, Goal: "make fixed.txt say ok"})
	if err != nil {
		t.Fatal(err)
	}
	if b != (engine.Budgets{}) {
		// Budgets come from the base's config; tests set their own under
		// a short lease, as a user command would.
		lease, _, err := e.Claim(context.Background(), tk.ID, ledger.LocalHolder("test-setup"))
		if err != nil {
			t.Fatal(err)
		}
		tk.Budgets = b
		if err := e.Ledger.UpdateTask(context.Background(), lease, tk); err != nil {
			t.Fatal(err)
		}
		e.Ledger.Release(context.Background(), lease)
	}
	return tk
}

func kinds(evs []engine.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Kind))
	}
	return out
}
