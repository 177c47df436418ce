package agentbackend

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/task"
)

// TestKillMidTurnLeavesNoContainer: engine/runner's kill harness, with
// the real product as the child: `bcode task run` is SIGKILLed while the
// agent, in its container, runs a terminal command. The agent ends on its
// closed stdin, but its container stays (its removal was deferred in the
// dead process). A
// second `bcode task run` takes the task over, removes the old fence's
// containers before its agent starts, resumes the conversation and ends;
// afterwards no container of the task exists.
func TestKillMidTurnLeavesNoContainer(t *testing.T) {
	requireSandbox(t)
	model := modeltest.New(modeltest.Options{Tools: true},
		call("terminal", jsonArgs(map[string]any{"command": "sleep 300", "timeout_seconds": 600})),
		// attempt 2, after the takeover: the interrupted call is in the
		// replayed history; the model gives up.
		finish("nothing to change after the interruption"),
	)
	f := newFixture(t, "kill", model, nil)
	id := f.create("Abs returns negative numbers unchanged; make it return the absolute value.")

	child, exited := startTaskRun(t, f, id)
	// Mid-turn: the model has answered with the terminal call and the
	// agent's container is running it.
	deadline := time.Now().Add(5 * time.Minute) // a bound on hangs: under load the index, the model check and the container start took over 2 minutes
	var running []string
	for {
		if len(model.Requests()) >= 1 {
			running = containersOf(t, id, "label="+LabelFence+"=1", "status=running")
			if len(running) > 0 {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("bcode task run ended before the kill: %v\n%s", err, f.agentLogs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's turn never started (%d model requests)\n%s", len(model.Requests()), f.agentLogs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // let the terminal command get going
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	// The kill left the container behind: the test is only meaningful if so.
	time.Sleep(500 * time.Millisecond)
	left := containersOf(t, id, "label="+LabelFence+"=1")
	if len(left) == 0 {
		t.Fatalf("no container of fence 1 left after SIGKILL: nothing for the takeover to clean up")
	}
	t.Logf("after SIGKILL: %v", left)

	start := time.Now()
	out, errOut, code := f.bcode(nil, "task", "run", id)
	t.Logf("takeover run: %s, exit %d", time.Since(start).Round(time.Millisecond), code)
	if code != 0 {
		t.Fatalf("takeover: exit %d\nstdout:\n%s\nstderr:\n%s\n%s", code, out, errOut, f.agentLogs())
	}
	if cs := containersOf(t, id); len(cs) != 0 {
		t.Errorf("containers of the task after the takeover: %v", cs)
	}
	if model.Remaining() != 0 {
		t.Errorf("the takeover's agent did not continue the script (%d steps left)", model.Remaining())
	}
	// The takeover knew the first runner was dead and recovered its attempt.
	led := f.ledger()
	evs, err := led.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	recovered, reaped := false, reapedIn(evs)
	for _, ev := range evs {
		if ev.Kind == "task.recovered" {
			var d struct {
				HolderDead bool  `json:"holder_dead"`
				Orphaned   []int `json:"orphaned_attempts"`
			}
			json.Unmarshal(ev.Data, &d)
			recovered = d.HolderDead && len(d.Orphaned) == 1
		}
	}
	if reaped < len(left) {
		t.Errorf("the takeover recorded %d reaped containers, want the %d the kill left", reaped, len(left))
	}
	if !recovered {
		t.Errorf("no task.recovered event with the dead holder and its orphaned attempt\n%s", out)
	}
}

// TestKillMidCheckLeavesNoContainer: the same harness, killing `bcode task
// run` while the gate verifies the agent's attempt in the sandbox: the
// attempt added a test that sleeps, so the gate's `go test` container is
// running when the runner dies: it stops within 10 s by itself, and is
// left behind, stopped. The takeover removes
// it before anything else (runner.Recoverer), records how many it
// removed, and finishes; no container of the task remains.
func TestKillMidCheckLeavesNoContainer(t *testing.T) {
	requireSandbox(t)
	slow := "package calc\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) {\n\ttime.Sleep(10 * time.Minute)\n}\n"
	model := modeltest.New(modeltest.Options{Tools: true},
		editor(map[string]any{"command": "create", "path": "slow_test.go", "file_text": slow}),
		finish("added a test"),
		// attempt 2, after the takeover: drop the slow test and stop.
		terminal("rm slow_test.go"),
		finish("removed the slow test"),
	)
	f := newFixture(t, "killcheck", model, nil)
	id := f.create("Abs returns negative numbers unchanged; make it return the absolute value.")

	child, exited := startTaskRun(t, f, id)
	// The gate's containers run `go`; the agent's runs bcode-agent.
	gateRunning := func() []string {
		out, err := exec.Command("docker", "ps", "--no-trunc", "--filter", "label="+LabelTask+"="+id,
			"--filter", "label="+LabelFence+"=1", "--filter", "status=running", "--format", "{{.ID}} {{.Command}}").CombinedOutput()
		if err != nil {
			t.Fatalf("docker ps: %v\n%s", err, out)
		}
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(l, "go test") || strings.Contains(l, `"go"`) || strings.Contains(l, "/go ") {
				ids = append(ids, strings.Fields(l)[0])
			}
		}
		return ids
	}
	deadline := time.Now().Add(6 * time.Minute) // a bound on hangs, not a speed check (load)
	for len(gateRunning()) == 0 {
		select {
		case err := <-exited:
			t.Fatalf("bcode task run ended before the gate ran the slow test: %v\n%s", err, f.agentLogs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gate's container never ran (%d model requests)\n%s", len(model.Requests()), f.agentLogs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	// The gate's container ends by itself (sandbox/docker's supervisor:
	// its stdin closed with the dead runner's connection), but stays
	// until someone removes it.
	killed := time.Now()
	for len(gateRunning()) > 0 {
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("the gate's container still runs 10 s after the runner was SIGKILLed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	left := containersOf(t, id, "label="+LabelFence+"=1")
	if len(left) == 0 {
		t.Fatalf("no container of fence 1 left after SIGKILL: nothing for the takeover to clean up")
	}
	t.Logf("after SIGKILL mid-check: the gate's container stopped %s later; left %v", time.Since(killed).Round(10*time.Millisecond), left)

	start := time.Now()
	out, errOut, code := f.bcode(nil, "task", "run", id)
	t.Logf("takeover run: %s, exit %d", time.Since(start).Round(time.Millisecond), code)
	if code != 0 && code != 1 {
		t.Fatalf("takeover: exit %d\nstdout:\n%s\nstderr:\n%s\n%s", code, out, errOut, f.agentLogs())
	}
	if cs := containersOf(t, id); len(cs) != 0 {
		t.Errorf("containers of the task after the takeover: %v", cs)
	}
	evs, err := f.ledger().Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if reaped := reapedIn(evs); reaped < len(left) {
		t.Errorf("the takeover recorded %d reaped containers, want the %d the kill left\n%s", reaped, len(left), out)
	}
}

// startTaskRun starts `bcode task run id` as a child to be killed; a failed
// test leaves no runner and no container of the task behind.
func startTaskRun(t *testing.T, f *fixture, id string) (*exec.Cmd, <-chan error) {
	t.Helper()
	child := f.bcodeCmd(nil, "task", "run", id)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	t.Cleanup(func() {
		_ = child.Process.Kill()
		for _, c := range containersOf(t, id) {
			_ = exec.Command("docker", "rm", "-f", strings.Fields(c)[0]).Run()
		}
	})
	return child, exited
}

// reapedIn is how many containers the task's sandbox.reaped events say
// a takeover removed.
func reapedIn(evs []engine.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == task.EventReaped {
			var d struct {
				Removed int `json:"removed"`
			}
			json.Unmarshal(ev.Data, &d)
			n += d.Removed
		}
	}
	return n
}
