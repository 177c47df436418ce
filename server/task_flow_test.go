package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/server/lsp"
)

// boundaryFix is what the scripted agent writes: the discount starts
// after 10 items, and a test pins it at 10 (it fails on the base).
const boundaryFix = `package price

// Discount returns the discount in percent for a basket of n items.
func Discount(n int) int {
	if n > 10 {
		return 5
	}
	return 0
}
`

const boundaryFixTest = `package price

import "testing"

func TestDiscountAtTen(t *testing.T) {
	if Discount(10) != 0 {
		t.Fatal("10 items get no discount")
	}
	if Discount(11) != 5 {
		t.Fatal("11 items get 5%")
	}
}
`

// editAgent is the agent a test wires into the server: each attempt's
// only turn writes files (none: the attempt changes nothing) and finishes.
type editAgent struct{ files map[string]string }

func (a editAgent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	return editSession{a: a, dir: in.Worktree}, nil
}

type editSession struct {
	a   editAgent
	dir string
}

func (s editSession) Turn(ctx context.Context) (runner.TurnResult, error) {
	for rel, body := range s.a.files {
		p := filepath.Join(s.dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return runner.TurnResult{}, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return runner.TurnResult{}, err
		}
	}
	return runner.TurnResult{Summary: "edited", Done: true}, nil
}

func (editSession) Close() error { return nil }

func agentBackend(a runner.Agent) server.Options {
	return server.Options{AgentBackend: func(context.Context, config.Config, engine.Task) (runner.Agent, error) { return a, nil }}
}

// useModel commits a .bcode/config.toml naming endpoint (and extra lines).
func useModel(t *testing.T, dir, endpoint, extra string) {
	t.Helper()
	write(t, dir, ".bcode/config.toml", []byte(fmt.Sprintf("[model]\nendpoint = %q\n%s", endpoint, extra)))
	fake.Git(t, dir, "add", ".bcode/config.toml")
	fake.Git(t, dir, "commit", "-qm", "model")
}

// taskChanges are the bcode/taskChanged notifications of task id so far.
func taskChanges(e *fake.Editor, id string, locked bool) []server.TaskChanged {
	var ns []fake.Notification
	if locked {
		ns = e.NotificationsLocked(server.MethodTaskChanged)
	} else {
		ns = e.Notifications(server.MethodTaskChanged)
	}
	var out []server.TaskChanged
	for _, n := range ns {
		var c server.TaskChanged
		if json.Unmarshal(n.Params, &c) == nil && c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// awaitEnded waits for the notification that ends task id's run.
func awaitEnded(t *testing.T, ctx context.Context, e *fake.Editor, id string) server.TaskChanged {
	t.Helper()
	var end server.TaskChanged
	if err := e.Await(ctx, "the run's end", func() bool {
		for _, c := range taskChanges(e, id, true) {
			if c.Ended {
				end = c
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v; notifications %+v; messages %q", err, taskChanges(e, id, false), e.Messages())
	}
	return end
}

// TestSelectionActionRunsTheTask is point 1 of the editor flow in the
// fake editor: "Create task from selection" asks for the goal (its
// command carries ask and run), the command creates the task and starts
// it in the server, each ledger event reaches the editor as it happens
// with the attempt and turn, the end is marked (verified, by the real
// gate on the host), bcode/tasks agrees, and Accept lands it on main.
func TestSelectionActionRunsTheTask(t *testing.T) {
	model := modeltest.New(modeltest.Options{})
	t.Cleanup(model.Close)
	e, ctx := setup(t, "boundary.txtar", agentBackend(editAgent{files: map[string]string{
		"price/price.go": boundaryFix, "price/boundary_test.go": boundaryFixTest}}))
	useModel(t, e.Dir, model.URL, "")
	if err := e.Open(ctx, "price/price.go"); err != nil {
		t.Fatal(err)
	}
	sel := lsp.Range{Start: lsp.Position{Line: 4, Character: 1}, End: lsp.Position{Line: 5, Character: 0}}
	acts, err := e.CodeActions(ctx, "price/price.go", sel, nil)
	if err != nil {
		t.Fatal(err)
	}
	act := find(acts, command.TitleCreateTask)
	if act == nil || act.Command == nil {
		t.Fatalf("no create-task action in %q", titles(acts))
	}
	var args command.TaskCreateArgs
	if err := json.Unmarshal(act.Command.Arguments[0], &args); err != nil {
		t.Fatal(err)
	}
	if !args.Ask || !args.Run || !strings.Contains(args.Goal, "price/price.go lines 5-5") || !strings.Contains(args.Goal, "if n >= 10") {
		t.Fatalf("the action's arguments %+v: want ask and run, with a goal suggested from the selection", args)
	}
	// The user's answer replaces the suggestion, as the clients do.
	args.Goal = "Give a basket of exactly 10 items no discount"
	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCreate, args), &res); err != nil {
		t.Fatal(err)
	}
	if res.ID == "" || res.Status != "running" {
		t.Fatalf("create: %+v, want a started task", res)
	}
	end := awaitEnded(t, ctx, e, res.ID)
	if end.Status != "verified" || end.Kind != task.EventVerified || end.Attempt != 1 || end.Turn != 1 {
		t.Fatalf("the end: %+v, want verified in attempt 1 after turn 1", end)
	}
	var kinds []string
	sawTurn := false
	for _, c := range taskChanges(e, res.ID, false) {
		kinds = append(kinds, string(c.Kind))
		if c.Kind == task.EventTurn {
			sawTurn = c.Attempt == 1 && c.Turn == 1 && c.Status == "running" && c.Summary == "turn 1 finished, files changed"
		}
	}
	joined := strings.Join(kinds, " ")
	for _, want := range []string{"task.created", "task.started", "attempt.started", "turn.finished", "check.started", "check.finished", "task.verified"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the editor was not told about %s: %s", want, joined)
		}
	}
	if !sawTurn {
		t.Errorf("the turn's notification lacks its attempt, turn or summary: %+v", taskChanges(e, res.ID, false))
	}
	var list server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].Goal != args.Goal || list.Tasks[0].Status != "verified" || list.Tasks[0].Attempt != 1 || list.Tasks[0].Turn != 1 {
		t.Fatalf("bcode/tasks: %+v", list.Tasks)
	}
	if err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: res.ID}), &res); err != nil || res.Status != "accepted" {
		t.Fatalf("accept: %+v %v", res, err)
	}
	got, err := os.ReadFile(filepath.Join(e.Dir, "price", "boundary_test.go"))
	if err != nil || string(got) != boundaryFixTest {
		t.Errorf("after accept, main's boundary_test.go: %q %v", got, err)
	}
}

// TestSelectionInANewFileIsRefused: "Create task from selection" on a file
// the base commit lacks (new, not committed) is an InvalidParams error
// saying to commit it first; no task is recorded.
func TestSelectionInANewFileIsRefused(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	write(t, e.Dir, "price/tax.go", []byte("package price\n\n// Tax is the tax in percent.\nfunc Tax(n int) int { return 20 }\n"))
	if err := e.Open(ctx, "price/tax.go"); err != nil {
		t.Fatal(err)
	}
	sel := lsp.Range{Start: lsp.Position{Line: 3}, End: lsp.Position{Line: 4}}
	acts, err := e.CodeActions(ctx, "price/tax.go", sel, nil)
	if err != nil {
		t.Fatal(err)
	}
	act := find(acts, command.TitleCreateTask)
	if act == nil {
		t.Fatalf("no create-task action in %q", titles(acts))
	}
	err = e.Execute(ctx, *act.Command, nil)
	var le *lsp.Error
	if !errors.As(err, &le) || le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, "commit it first") || !strings.Contains(le.Message, "price/tax.go") {
		t.Fatalf("create on a new file: %v, want InvalidParams saying to commit price/tax.go first", err)
	}
	var list server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &list); err != nil || len(list.Tasks) != 0 {
		t.Fatalf("bcode/tasks after the refusal: %+v %v", list.Tasks, err)
	}
}

// TestStartFailureThenResume: a task whose run cannot start (no model
// answers) says why within the run's start: an error message with the
// fix, a task.start_failed event in the ledger that reaches the editor
// (what is missing, the command), the queued task's reason; a "Resume
// task" code action is offered, and once the model answers it runs the
// task to its end.
func TestStartFailureThenResume(t *testing.T) {
	model := modeltest.New(modeltest.Options{})
	t.Cleanup(model.Close)
	e, ctx := setup(t, "boundary.txtar", agentBackend(editAgent{files: map[string]string{
		"price/price.go": boundaryFix, "price/boundary_test.go": boundaryFixTest}}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	useModel(t, e.Dir, "http://"+addr, "")

	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCreate, command.TaskCreateArgs{Goal: "pin the boundary", Run: true}), &res); err != nil {
		t.Fatal(err)
	}
	var failed server.TaskChanged
	if err := e.Await(ctx, "the start failure", func() bool {
		for _, c := range taskChanges(e, res.ID, true) {
			if c.Kind == task.EventStartFailed && c.Seq > 0 {
				failed = c
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v: %+v", err, taskChanges(e, res.ID, false))
	}
	if failed.Status != "queued" || !strings.Contains(failed.Reason, addr) || !strings.Contains(failed.Summary, "no model") || !strings.Contains(failed.Summary, "bcode model serve") {
		t.Errorf("the start failure: %+v", failed)
	}
	if !strings.Contains(strings.Join(e.Messages(), "\n"), "could not start") {
		t.Errorf("no error message: %q", e.Messages())
	}
	var detail server.TaskDetail
	if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": res.ID}, &detail); err != nil {
		t.Fatal(err)
	}
	var recorded *task.StartFailure
	for _, ev := range detail.Events {
		if ev.Kind == task.EventStartFailed {
			recorded = &task.StartFailure{}
			json.Unmarshal(ev.Data, recorded)
		}
	}
	if recorded == nil || recorded.Missing != "model" || !strings.Contains(recorded.Fix, "bcode model serve") {
		t.Fatalf("the ledger's task.start_failed: %+v", recorded)
	}

	// The model comes up where the config says; Resume runs the task.
	target, _ := url.Parse(model.URL)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	acts, err := e.CodeActions(ctx, "price/price.go", lsp.Range{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resume := find(acts, command.TitleResumeTask+" "+res.ID)
	if resume == nil {
		t.Fatalf("no resume action for the task that did not start: %q", titles(acts))
	}
	if err := e.Execute(ctx, *resume.Command, &res); err != nil {
		t.Fatal(err)
	}
	if end := awaitEnded(t, ctx, e, res.ID); end.Status != "verified" {
		t.Fatalf("after resume: %+v", end)
	}
}

// TestAttemptThatChangesNothingInTheEditor: an agent that changes nothing
// ends the task blocked on its attempt budget; the editor is told of the
// attempt that changed nothing, the end is marked, and nowhere does the
// task show bcode check's "pass --base REV" advice.
func TestAttemptThatChangesNothingInTheEditor(t *testing.T) {
	model := modeltest.New(modeltest.Options{})
	t.Cleanup(model.Close)
	e, ctx := setup(t, "boundary.txtar", agentBackend(editAgent{}))
	useModel(t, e.Dir, model.URL, "[task]\nmax_attempts = 1\n")
	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCreate, command.TaskCreateArgs{Goal: "pin the boundary", Run: true}), &res); err != nil {
		t.Fatal(err)
	}
	end := awaitEnded(t, ctx, e, res.ID)
	if end.Status != "blocked" || strings.Contains(end.Reason, "--base") {
		t.Fatalf("the end: %+v", end)
	}
	var saw bool
	for _, c := range taskChanges(e, res.ID, false) {
		saw = saw || (c.Kind == task.EventNoChange && c.Summary == "attempt 1 changed nothing")
		if strings.Contains(c.Reason, "--base") {
			t.Errorf("a notification carries bcode check's advice: %+v", c)
		}
	}
	if !saw {
		t.Errorf("the editor was not told the attempt changed nothing: %+v", taskChanges(e, res.ID, false))
	}
	var detail server.TaskDetail
	if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": res.ID}, &detail); err != nil {
		t.Fatal(err)
	}
	if len(detail.Attempts) != 1 || detail.Attempts[0].Verdict != engine.AttemptNoChange {
		t.Errorf("attempts %+v", detail.Attempts)
	}
}
