package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/sandbox/host"
)

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// buildAgent builds the real bcode-agent, static, once per test binary.
func buildAgent(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("bcode-agent is linux-only")
	}
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bcode-agent-bin-")
		if err != nil {
			agentErr = err
			return
		}
		agentBin = filepath.Join(dir, "bcode-agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "github.com/bcode-dev/bcode/cmd/bcode-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = &buildError{err, string(out)}
		}
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build bcode-agent: " + e.err.Error() + "\n" + e.out }

const buggySum = `package sum

// Sum adds xs.
func Sum(xs []int) int {
	total := 0
	for i := 1; i < len(xs); i++ {
		total += xs[i]
	}
	return total
}
`

const sumTest = `package sum

import "testing"

func TestSum(t *testing.T) {
	if got := Sum([]int{1, 2, 3}); got != 6 {
		t.Fatalf("Sum = %d, want 6", got)
	}
}
`

func goModule(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go toolchain on PATH")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/sum\n\ngo 1.22\n", "sum.go": buggySum, "sum_test.go": sumTest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func args(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestEndToEndAgentOverPipes runs the real bcode-agent as a host process
// through sandbox/host, its stdio wired to a gateway session, against a
// scripted model that views the file, fixes it with str_replace, runs go
// test in the terminal and finishes. One forced context overflow on the
// way makes the agent condense and carry on.
func TestEndToEndAgentOverPipes(t *testing.T) {
	bin := buildAgent(t)
	work := goModule(t)
	f := newFixture(t)
	srv := modeltest.New(modeltest.Options{Tools: true},
		modeltest.Step{Content: "Let me look at the code.", ToolCalls: []modeltest.Call{{Name: "file_editor", Arguments: args(map[string]any{"command": "view", "path": "sum.go"})}}},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "task_tracker", Arguments: args(map[string]any{"command": "plan", "items": []map[string]string{{"title": "fix the loop start", "status": "in_progress"}}})}}},
		modeltest.Step{Content: "The loop skips xs[0].", ToolCalls: []modeltest.Call{{Name: "file_editor", Arguments: args(map[string]any{"command": "str_replace", "path": "sum.go", "old_str": "for i := 1; i < len(xs); i++ {", "new_str": "for i := 0; i < len(xs); i++ {"})}}},
		modeltest.Step{Overflow: true},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "terminal", Arguments: args(map[string]any{"command": "go test ./...", "timeout_seconds": 120})}}},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "finish", Arguments: args(map[string]any{"summary": "Sum now starts at index 0; TestSum passes."})}}},
	)
	defer srv.Close()
	g := newGateway(srv, f, true)
	r, err := gateway.NewRedactor(nil, gateway.DefaultHostPaths(work, ""))
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	ap := &gateway.AgentProcess{Gateway: g, Runner: host.New(), Command: []string{bin}}
	ap.Stderr = &lockedWriter{w: &stderr}
	ap.Timeout = 3 * time.Minute
	ctx := context.Background()
	out, err := ap.Run(ctx, gateway.AgentSpec{Session: f.spec(t, r), Worktree: work})
	if err != nil {
		t.Fatalf("Run: %v\nagent log:\n%s", err, stderr.String())
	}
	if out.Reason != "done" || !strings.Contains(out.Summary, "index 0") {
		t.Fatalf("outcome %+v\nagent log:\n%s", out, stderr.String())
	}
	if srv.Remaining() != 0 || len(srv.Failures()) != 0 {
		t.Errorf("script: %d steps left, failures %v", srv.Remaining(), srv.Failures())
	}
	got, _ := os.ReadFile(filepath.Join(work, "sum.go"))
	if !strings.Contains(string(got), "for i := 0; i < len(xs); i++ {") {
		t.Errorf("sum.go not fixed:\n%s", got)
	}
	if !strings.Contains(stderr.String(), "condensed") {
		t.Errorf("the overflow did not make the agent condense:\n%s", stderr.String())
	}

	// The observations in the ledger are the real tool results.
	var obs []string
	for _, e := range f.events(t, gateway.EventObservation) {
		var d struct{ Tool, Output string }
		json.Unmarshal(e.Data, &d)
		obs = append(obs, d.Tool+": "+d.Output)
	}
	if len(obs) != 5 {
		t.Fatalf("observations:\n%s", strings.Join(obs, "\n---\n"))
	}
	if !strings.Contains(obs[0], "for i := 1; i < len(xs); i++ {") || !strings.Contains(obs[3], "ok  \texample.com/sum") || !strings.Contains(obs[3], "[exit code 0") {
		t.Errorf("observations:\n%s", strings.Join(obs, "\n---\n"))
	}
	// The worktree's host path never reached the model.
	for _, req := range srv.Requests() {
		if strings.Contains(string(req.Body), work) {
			t.Errorf("the worktree path reached the model: %s", req.Body)
		}
	}
	// After condensing, the request carries the summary and not the
	// first round's file view.
	last := string(srv.Requests()[len(srv.Requests())-1].Body)
	if !strings.Contains(last, "Condensed history") || strings.Contains(last, "Let me look at the code.") {
		t.Errorf("last request after condensation: %s", last)
	}

	// Replay gives back the same conversation, each call matched.
	tr, err := gateway.LoadTranscript(ctx, f.led, f.lease.TaskID, f.attempt.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Turns != 5 || !tr.Finished || len(tr.Interrupted) != 0 || len(tr.Messages) != 10 {
		t.Errorf("transcript: turns %d finished %v interrupted %v messages %d", tr.Turns, tr.Finished, tr.Interrupted, len(tr.Messages))
	}
}

// TestAgentExitsWithoutFinishing: a model that never calls a tool makes the
// agent give up; the session reports it and the process is gone.
func TestAgentGivesUpWithoutToolCalls(t *testing.T) {
	bin := buildAgent(t)
	work := goModule(t)
	f := newFixture(t)
	srv := modeltest.New(modeltest.Options{Tools: true}, modeltest.Step{Content: "hmm"}, modeltest.Step{Content: "hmm."}, modeltest.Step{Content: "hmm.."})
	defer srv.Close()
	ap := &gateway.AgentProcess{Gateway: newGateway(srv, f, false), Runner: host.New(), Command: []string{bin}}
	out, err := ap.Run(context.Background(), gateway.AgentSpec{Session: f.spec(t, nil), Worktree: work})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != "error" || !strings.Contains(out.Summary, "without calling a tool") {
		t.Errorf("outcome %+v", out)
	}
}

// TestResumeAfterKill: an attempt's log whose last call has no observation
// (the runner was SIGKILLed while it ran) is replayed into a new session;
// the agent continues from it and the model sees the history, the cut-off
// call marked interrupted and not re-run.
func TestResumeAfterKill(t *testing.T) {
	bin := buildAgent(t)
	work := goModule(t)
	f := newFixture(t)
	ctx := context.Background()
	// First session: one full turn, then a call whose observation never
	// arrives (the test plays the agent and stops there).
	srv1 := modeltest.New(modeltest.Options{Tools: true},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "terminal", Arguments: `{"command":"ls"}`}}},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "terminal", Arguments: `{"command":"touch interrupted-marker"}`}}})
	defer srv1.Close()
	sess, err := newGateway(srv1, f, false).Open(ctx, f.spec(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	a := serve(t, sess)
	a.init()
	res, _ := a.chat(base()...)
	a.observe(res.Message.ToolCalls[0].ID, "terminal", "go.mod\nsum.go\nsum_test.go")
	if _, err := a.chat(base()...); err != nil {
		t.Fatal(err)
	}
	a.close() // killed here: the second call has an action and no observation

	tr, err := gateway.LoadTranscript(ctx, f.led, f.lease.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Turns != 2 || len(tr.Interrupted) != 1 || tr.Finished {
		t.Fatalf("transcript %+v", tr)
	}
	srv2 := modeltest.New(modeltest.Options{Tools: true},
		modeltest.Step{ToolCalls: []modeltest.Call{{Name: "finish", Arguments: `{"summary":"resumed"}`}}})
	defer srv2.Close()
	spec := f.spec(t, nil)
	spec.Resume = tr
	out, err := (&gateway.AgentProcess{Gateway: newGateway(srv2, f, false), Runner: host.New(), Command: []string{bin}}).Run(ctx, gateway.AgentSpec{Session: spec, Worktree: work})
	if err != nil || out.Reason != "done" || out.Turns != 3 {
		t.Fatalf("resumed: %+v %v", out, err)
	}
	body := string(srv2.Requests()[0].Body)
	for _, want := range []string{"sum_test.go", "touch interrupted-marker", "[interrupted", "bcode was restarted"} {
		if !strings.Contains(body, want) {
			t.Errorf("resumed request lacks %q: %s", want, body)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "interrupted-marker")); err == nil {
		t.Error("the interrupted call was re-run")
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
