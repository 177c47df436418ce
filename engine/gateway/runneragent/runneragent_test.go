package runneragent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/openai"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/sandbox/host"
)

func buildAgent(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("bcode-agent is linux-only")
	}
	bin := filepath.Join(t.TempDir(), "bcode-agent")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/bcode-dev/bcode/cmd/bcode-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func attemptInput(t *testing.T) (agent.AttemptInput, *ledger.Ledger) {
	t.Helper()
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("hello\n"), 0o644)
	task := &engine.Task{Repo: work, Goal: "Say hello louder.", Base: "HEAD", Criteria: []string{"a.txt says HELLO"},
		Budgets: engine.Budgets{MaxTurns: 10, MaxTokens: 100000, WallClock: 5 * time.Minute}}
	if err := led.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	lease, _, err := led.Acquire(ctx, task.ID, ledger.LocalHolder(""), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := led.StartAttempt(ctx, lease, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	prev := engine.Attempt{Number: 0, Status: engine.AttemptFinished, Verdict: "failed", Note: "try uppercase"}
	return agent.AttemptInput{Task: *task, Attempt: *a, Worktree: work, Lease: lease, History: []engine.Attempt{prev}}, led
}

// TestTurnsStepTheAgent: each Turn runs exactly one agent turn; between
// turns the agent waits (no model call goes out), so the runner's commit
// sees a quiet worktree.
func TestTurnsStepTheAgent(t *testing.T) {
	bin := buildAgent(t)
	in, led := attemptInput(t)
	srv := modeltest.New(modeltest.Options{Tools: true},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "file_editor", Arguments: `{"command":"str_replace","path":"a.txt","old_str":"hello","new_str":"HELLO"}`}}, PromptTokens: 500, CompletionTokens: 20},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "finish", Arguments: `{"summary":"louder"}`}}, PromptTokens: 600, CompletionTokens: 5})
	defer srv.Close()
	c := openai.New(srv.URL, "")
	g := &gateway.Gateway{Backend: &gateway.OpenAIBackend{Client: c}, Probe: c, Ledger: led}
	ag := New(g, host.New(), bin)
	ag.Environ = []string{}
	ctx := context.Background()
	sess, err := ag.StartAttempt(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	time.Sleep(300 * time.Millisecond)
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model calls before the first Turn", n)
	}
	tr, err := sess.Turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Done || tr.TokensUsed != 520 || !strings.Contains(tr.Summary, "file_editor") {
		t.Errorf("turn 1: %+v", tr)
	}
	if got, _ := os.ReadFile(filepath.Join(in.Worktree, "a.txt")); string(got) != "HELLO\n" {
		t.Errorf("a.txt = %q after turn 1", got)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d model calls after one Turn (the agent did not wait)", n)
	}
	body := string(srv.Requests()[0].Body)
	for _, want := range []string{"Say hello louder.", "a.txt says HELLO", "try uppercase"} {
		if !strings.Contains(body, want) {
			t.Errorf("task prompt lacks %q", want)
		}
	}
	if strings.Contains(body, in.Worktree) {
		t.Error("the worktree's host path reached the model")
	}
	tr, err = sess.Turn(ctx)
	if err != nil || !tr.Done || tr.TokensUsed != 605 {
		t.Fatalf("turn 2: %+v %v", tr, err)
	}
	if err := sess.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestSmallModelRefusedAtStart(t *testing.T) {
	in, led := attemptInput(t)
	srv := modeltest.New(modeltest.Options{Tools: true, NCtx: 4096})
	defer srv.Close()
	c := openai.New(srv.URL, "")
	ag := New(&gateway.Gateway{Backend: &gateway.OpenAIBackend{Client: c}, Probe: c, Ledger: led}, host.New(), "/nonexistent/bcode-agent")
	_, err := ag.StartAttempt(context.Background(), in)
	if !errors.Is(err, gateway.ErrContextTooSmall) || !strings.Contains(err.Error(), "4096") {
		t.Errorf("got %v", err)
	}
}

func TestEndResult(t *testing.T) {
	if r, err := EndResult(gateway.Outcome{Reason: "done", Summary: "x"}); err != nil || !r.Done {
		t.Errorf("done: %+v %v", r, err)
	}
	if r, err := EndResult(gateway.Outcome{Reason: "stuck", Note: "n"}); err != nil || !r.Stuck || r.Note != "n" {
		t.Errorf("stuck: %+v %v", r, err)
	}
	if r, err := EndResult(gateway.Outcome{Reason: "budget", Summary: "turn budget spent"}); err != nil || !r.Stuck || !strings.Contains(r.Note, "turn budget") {
		t.Errorf("budget: %+v %v", r, err)
	}
	if _, err := EndResult(gateway.Outcome{Reason: "agent_exited", Summary: "status 1"}); err == nil {
		t.Error("an agent that exited is an error")
	}
}
