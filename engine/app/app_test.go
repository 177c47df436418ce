package app_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// packRepo is a Go module with a caller, a callee, a test, rules for agents
// and a model endpoint nothing answers on (so every pack counts with the
// estimate and says why, the same way each time).
const packRepo = `
-- go.mod --
module example.com/calc

go 1.22
-- AGENTS.md --
Keep functions small.
-- num/num.go --
package num

// Double doubles.
func Double(x int) int {
	return 2 * x
}
-- calc/calc.go --
package calc

import "example.com/calc/num"

// Quad quadruples.
func Quad(x int) int {
	return num.Double(num.Double(x))
}
-- calc/calc_test.go --
package calc

import "testing"

func TestQuad(t *testing.T) {
	if Quad(1) != 4 {
		t.Fatal(Quad(1))
	}
}
-- .bcode/config.toml --
[model]
endpoint = "http://127.0.0.1:1"
`

// previewAgent is an agent that, at the moment the runner hands it its
// pack, asks the engine for the task's pack the way the editor's "Preview
// context pack" does, then stops.
type previewAgent struct {
	eng  *app.Engine
	repo string

	mu                sync.Mutex
	agentPack         *pack.Pack
	preview           *pack.Pack
	previewErr        error
	worktreeIsTheRepo bool
}

func (a *previewAgent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	p, err := a.eng.Pack(ctx, app.PackRequest{Repo: a.repo, TaskID: in.Task.ID})
	a.mu.Lock()
	a.agentPack, a.preview, a.previewErr = in.Pack, p, err
	a.worktreeIsTheRepo = filepath.Clean(in.Worktree) == filepath.Clean(a.repo)
	a.mu.Unlock()
	return stuck{}, nil
}

type stuck struct{}

func (stuck) Turn(context.Context) (runner.TurnResult, error) {
	return runner.TurnResult{Summary: "done looking", Stuck: true}, nil
}
func (stuck) Close() error { return nil }

// TestPreviewIsTheAgentsPack: the pack the editor previews for a task (and
// `bcode pack --task` prints: both are app.Pack) is, byte for byte, the pack
// the runner gives the task's agent, built the way engine/app builds an attempt's.
func TestPreviewIsTheAgentsPack(t *testing.T) {
	ctx := context.Background()
	repo := testrepo.FromTxtar(t, packRepo).Dir
	ledgerPath := filepath.Join(t.TempDir(), "ledger.db")
	led, err := ledger.Open(ctx, ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	tasks := task.New(led)
	tk, err := tasks.Create(ctx, task.CreateInput{Repo: repo, Goal: "make Double overflow-safe",
		Selection: &engine.Selection{File: "num/num.go", StartLine: 4, EndLine: 6}, Criteria: []string{"Double(MaxInt) does not wrap"}})
	if err != nil {
		t.Fatal(err)
	}
	scanner, err := secrets.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	// The engine reads the task's history from the same ledger file.
	eng := app.Open(app.Options{LedgerPath: ledgerPath})
	t.Cleanup(func() { eng.Close() })
	agent := &previewAgent{eng: eng, repo: repo}
	r := &runner.Runner{
		Engine:  tasks,
		Agent:   agent,
		Checker: runner.GateChecker{Sandbox: host.Sandbox{}, Recorder: led, Scanner: scanner},
		Context: runner.NewPackBuilder(ctx, "http://127.0.0.1:1", runner.ProbeTimeout, scanner, led),
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := r.Run(rctx, tk.ID); err != nil && !errors.Is(err, runner.ErrNotRunnable) {
		t.Logf("run: %v", err)
	}
	agent.mu.Lock()
	defer agent.mu.Unlock()
	if agent.agentPack == nil {
		t.Fatal("the runner gave the agent no pack")
	}
	if agent.previewErr != nil {
		t.Fatalf("preview: %v", agent.previewErr)
	}
	if agent.worktreeIsTheRepo {
		t.Fatal("the attempt ran in the user's checkout, not a worktree: the comparison would prove nothing")
	}
	got, want := pack.Render(agent.preview), pack.Render(agent.agentPack)
	if got != want {
		t.Fatalf("the preview differs from the agent's pack\n--- preview\n%s\n--- agent\n%s", got, want)
	}
	for _, must := range []string{"func Double(x int) int {", "Double(MaxInt) does not wrap", "Keep functions small.", "tokens estimated"} {
		if !strings.Contains(want, must) {
			t.Errorf("the agent's pack lacks %q:\n%s", must, want)
		}
	}
	t.Logf("preview == agent pack: %d bytes, %d tokens, %d sections", len(want), agent.agentPack.Total, len(agent.agentPack.Sections))
}
