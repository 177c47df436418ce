package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// closedEndpoint is a loopback URL nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestRunThatCannotStartIsRecorded: a run that cannot start says why in
// the ledger, within seconds: a task.start_failed event naming what is
// missing and the command that fixes it, and on the queued task the
// reason. Each missing piece
// (model, Docker, image, agent) is told apart by the error that stopped
// the run, never by its text.
func TestRunThatCannotStartIsRecorded(t *testing.T) {
	ctx := context.Background()
	r := testrepo.FromTxtar(t, packRepo)
	endpoint := closedEndpoint(t)
	r.Write(map[string]string{".bcode/config.toml": fmt.Sprintf("[model]\nendpoint = %q\n", endpoint)})
	r.Commit("a model nobody serves")
	var backendErr error
	eng := app.Open(app.Options{LedgerPath: filepath.Join(t.TempDir(), "ledger.db"),
		Agent: func(context.Context, config.Config, engine.Task) (agent.Agent, error) { return nil, backendErr }})
	t.Cleanup(func() { eng.Close() })
	tk, err := eng.CreateTask(ctx, app.TaskRequest{Repo: r.Dir, Goal: "double safely"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := eng.RunTask(ctx, tk.ID, app.RunOptions{}); !errors.Is(err, runner.ErrNoModel) {
		t.Fatalf("run: %v, want ErrNoModel", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("saying why took %s", d)
	}
	got, err := eng.Task(ctx, tk.ID)
	if err != nil || got.Status != engine.TaskQueued || !strings.HasPrefix(got.Reason, "could not start: ") || !strings.Contains(got.Reason, endpoint) {
		t.Fatalf("task after the failed start: %+v %v", got, err)
	}
	f := lastStartFailure(t, eng, tk.ID)
	if f.Missing != "model" || !strings.Contains(f.Fix, "bcode model serve") || !strings.Contains(f.Reason, endpoint) {
		t.Errorf("start failure %+v", f)
	}

	// The classification, by sentinel: what each backend error wraps.
	for _, c := range []struct {
		err     error
		missing string
		fix     string
	}{
		{fmt.Errorf("the agent runs in a Docker sandbox: %w (dial unix: no such file)", docker.ErrUnavailable), "docker", "docker"},
		{fmt.Errorf("the agent runs in a Docker sandbox: bcode-sandbox:x: %w", docker.ErrNoImage), "image", "bcode sandbox build"},
		{fmt.Errorf("%w (looked at [...])", agentbackend.ErrNoAgent), "agent", "go install"},
		{fmt.Errorf("the model at x answers, but %w", app.ErrNoAgentBackend), "agent", "go install"},
		{errors.New("the base commit's .bcode/config.toml: bad key"), "setup", ""},
	} {
		if f := app.StartFailureOf(c.err); f.Missing != c.missing || !strings.Contains(f.Fix, c.fix) || f.Reason != c.err.Error() {
			t.Errorf("StartFailureOf(%v) = %+v, want missing %s, fix with %q", c.err, f, c.missing, c.fix)
		}
	}
}

// TestResumeThatCannotStartIsRecorded: a blocked task whose resume cannot
// start keeps its status and budgets; the event says why.
func TestResumeThatCannotStartIsRecorded(t *testing.T) {
	ctx := context.Background()
	r := testrepo.FromTxtar(t, packRepo)
	r.Write(map[string]string{".bcode/config.toml": fmt.Sprintf("[model]\nendpoint = %q\n", closedEndpoint(t))})
	r.Commit("a model nobody serves")
	eng := app.Open(app.Options{LedgerPath: filepath.Join(t.TempDir(), "ledger.db"),
		Agent: func(context.Context, config.Config, engine.Task) (agent.Agent, error) {
			return nil, errors.New("not reached")
		}})
	t.Cleanup(func() { eng.Close() })
	tk, err := eng.CreateTask(ctx, app.TaskRequest{Repo: r.Dir, Goal: "double safely"})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.CancelTask(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ResumeTask(ctx, tk.ID, engine.Budgets{}, app.RunOptions{}); !errors.Is(err, runner.ErrNoModel) {
		t.Fatalf("resume: %v, want ErrNoModel", err)
	}
	got, _ := eng.Task(ctx, tk.ID)
	if got.Status != engine.TaskCancelled {
		t.Errorf("status %s after a resume that did not start, want it unchanged (cancelled)", got.Status)
	}
	if f := lastStartFailure(t, eng, tk.ID); f.Missing != "model" {
		t.Errorf("start failure %+v", f)
	}
}

func lastStartFailure(t *testing.T, eng *app.Engine, id string) task.StartFailure {
	t.Helper()
	var f task.StartFailure
	n := 0
	if err := eng.TaskEvents(context.Background(), id, 0, false, func(ev engine.Event) error {
		if ev.Kind == task.EventStartFailed {
			n++
			return json.Unmarshal(ev.Data, &f)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d task.start_failed events, want 1", n)
	}
	return f
}
