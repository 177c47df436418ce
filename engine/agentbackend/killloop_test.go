package agentbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// The product kill loops: the real `bcode task run` and `bcode runner`, the
// agent in its Docker container, the gate in the sandbox, the scripted model
// server, SIGKILLed at random moments. After each kill no container of the
// killed process runs 10 s later; at the end every task is verified, the
// ledger's checks hold, every takeover is recorded, and nothing of any
// killed process is left: no container, no process, no scratch directory.

// fixedMarker is what the fix command prints when it has written both
// files; the command's own text computes it, so an echo of the command
// (an interrupted call replayed in the history) does not contain it.
const fixedMarker = "BCODE-KILLLOOP-42"

// fixCommand writes the fix and its test, idempotently: a run killed in
// the middle of it is simply run again by the next holder's agent. (Its
// test once slept a second, because a mutant's budget was wall time that
// a loaded machine's container start used up; the budget is CPU time now.)
const fixCommand = `printf 'package calc\n\n// Abs returns the absolute value of x.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n' > calc.go && ` +
	`printf 'package calc\n\nimport "testing"\n\nfunc TestAbsNegative(t *testing.T) {\n\tif got := Abs(-4); got != 4 {\n\t\tt.Fatalf("Abs(-4) = %%d, want 4", got)\n\t}\n}\n' > abs_test.go && ` +
	`echo BCODE-KILLLOOP-$((40+2))`

// fixPolicy is the model for runs that die at any point: when the last
// message is the fix command's successful result it finishes, otherwise
// it (re)runs the fix command.
func fixPolicy(msgs []modeltest.Message) modeltest.Step {
	if n := len(msgs); n > 0 && msgs[n-1].Role == "tool" && strings.Contains(msgs[n-1].Content, fixedMarker) {
		return finish("Abs returns -x for negative x; TestAbsNegative covers it")
	}
	return terminal(fixCommand)
}

// killCount is the loop's number of kills: full unless -short, or
// BCODE_KILLS.
func killCount(full, short int) int {
	if v, err := strconv.Atoi(os.Getenv("BCODE_KILLS")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		return short
	}
	return full
}

// leftovers is what the loops check a killed process left.
type leftovers struct {
	t      *testing.T
	killed []int // pids of SIGKILLed bcode processes
}

// runningContainersOf lists the running sandbox containers whose owner
// label names pid.
func runningContainersOf(t *testing.T, pid int, status string) []string {
	t.Helper()
	args := []string{"ps", "--filter", "label=" + docker.LabelOwner, "--format", `{{.ID}} {{.Label "` + docker.LabelOwner + `"}}`}
	if status == "" {
		args = append(args, "-a")
	} else {
		args = append(args, "--filter", "status="+status)
	}
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && strings.HasPrefix(f[1], strconv.Itoa(pid)+"-") {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// afterKill waits for the killed process's containers to stop: 10 s at
// most, by their own supervisor, with no sweep.
func (l *leftovers) afterKill(pid int) time.Duration {
	l.t.Helper()
	l.killed = append(l.killed, pid)
	start := time.Now()
	for {
		running := runningContainersOf(l.t, pid, "running")
		if len(running) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			l.t.Fatalf("%d containers of SIGKILLed pid %d still run 10 s after the kill: %v", len(running), pid, running)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// final checks, once later bcode processes have started and ended, that
// nothing of any killed process is left, and that no bcode process runs.
func (l *leftovers) final() {
	t := l.t
	t.Helper()
	root, err := scratch.Root()
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(root)
	for _, pid := range l.killed {
		if cs := runningContainersOf(t, pid, ""); len(cs) > 0 {
			t.Errorf("containers of SIGKILLed pid %d left: %v", pid, cs)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), strconv.Itoa(pid)+"-") {
				t.Errorf("scratch directory of SIGKILLed pid %d left: %s", pid, filepath.Join(root, e.Name()))
			}
		}
	}
	// Processes: any bcode of ours, or anything carrying a killed
	// process's owner id.
	procs, _ := os.ReadDir("/proc")
	bcode := filepath.Join(binDir, "bcode")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink("/proc/" + p.Name() + "/exe"); err == nil && exe == bcode {
			stat, _ := os.ReadFile("/proc/" + p.Name() + "/stat")
			if !bytes.Contains(stat, []byte(") Z")) {
				t.Errorf("a bcode process still runs: pid %d", pid)
			}
		}
		env, _ := os.ReadFile("/proc/" + p.Name() + "/environ")
		for _, k := range l.killed {
			if bytes.Contains(env, []byte(scratch.OwnerEnv+"="+strconv.Itoa(k)+"-")) {
				t.Errorf("process %d of SIGKILLed pid %d still runs", pid, k)
			}
		}
	}
}

// checkTakeovers: in each task's log, fences never go back, and every
// fence after the first that started work has a task.recovered event
// naming an earlier fence.
func checkTakeovers(t *testing.T, id string, evs []engine.Event) (takeovers int) {
	t.Helper()
	var last int64
	started := map[int64]bool{}
	recovered := map[int64]bool{}
	for _, ev := range evs {
		if ev.Fence < last {
			t.Errorf("task %s: event %d (%s) at fence %d after fence %d", id, ev.Seq, ev.Kind, ev.Fence, last)
		}
		last = max(last, ev.Fence)
		switch ev.Kind {
		case task.EventStarted:
			started[ev.Fence] = true
		case task.EventRecovered:
			var d struct {
				PreviousFence int64 `json:"previous_fence"`
			}
			json.Unmarshal(ev.Data, &d)
			if d.PreviousFence <= 0 || d.PreviousFence >= ev.Fence {
				t.Errorf("task %s: task.recovered at fence %d names previous fence %d", id, ev.Fence, d.PreviousFence)
			}
			recovered[ev.Fence] = true
		}
	}
	first := true
	for f := int64(1); f <= last; f++ {
		if !started[f] {
			continue
		}
		if first {
			first = false
			continue
		}
		takeovers++
		if !recovered[f] {
			t.Errorf("task %s: fence %d took over without a task.recovered event", id, f)
		}
	}
	return takeovers
}

// afterTrigger fires delay after the trigger: the start, or the next model
// request from now (a run that ends first fires nothing; the caller sees
// exited).
func afterTrigger(model *modeltest.Server, trigger string, delay time.Duration, exited <-chan error) <-chan time.Time {
	if trigger == "start" {
		return time.After(delay)
	}
	fire := make(chan time.Time, 1)
	base := len(model.Requests())
	go func() {
		for end := time.Now().Add(20 * time.Minute); len(model.Requests()) == base; {
			time.Sleep(50 * time.Millisecond)
			if len(exited) > 0 || time.Now().After(end) {
				return
			}
		}
		time.Sleep(delay)
		fire <- time.Now()
	}()
	return fire
}

// output is a child's output, read while it writes.
type output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// startBcode starts the CLI with its output kept (for failures).
func startBcode(t *testing.T, f *fixture, env []string, args ...string) (*exec.Cmd, *output, <-chan error) {
	t.Helper()
	cmd := f.bcodeCmd(env, args...)
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, out, exited
}

// TestKillLoopSQLite: `bcode task run` on the embedded ledger, SIGKILLed 12
// times (3 with -short) at random moments from 0.2 to 8 s after it started,
// each time continued by the next `bcode task run`; a task that ends
// verified between kills is followed by a new one. Then each task runs to
// its end.
func TestKillLoopSQLite(t *testing.T) {
	requireSandbox(t)
	kills := killCount(12, 3)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	t.Logf("seed %d, %d kills", seed, kills)
	model := modeltest.New(modeltest.Options{Tools: true, Respond: fixPolicy})
	f := newFixture(t, "killloop", model, nil)
	goal := "Abs returns negative numbers unchanged; make it return the absolute value."
	tasks := []string{f.create(goal)}
	lo := &leftovers{t: t}
	start := time.Now()
	for done, runs := 0, 0; done < kills; runs++ {
		if runs > 6*kills {
			t.Fatalf("%d runs for %d kills", runs, done)
		}
		id := tasks[len(tasks)-1]
		child, out, exited := startBcode(t, f, nil, "task", "run", id)
		// Half the kills come at a random time after the start (most of
		// them land in the preparation: pack, warm-up, container start),
		// half at a random time after the run's first model request (the
		// agent's turns, the checkpoint, the gate).
		delay := 200*time.Millisecond + time.Duration(rng.Int64N(int64(8*time.Second)))
		trigger := "start"
		if rng.IntN(2) == 1 {
			trigger = "first model request"
			delay = time.Duration(rng.Int64N(int64(5 * time.Second)))
		}
		at := afterTrigger(model, trigger, delay, exited)
		select {
		case <-exited:
			st := f.status(id)
			if task, _ := st["task"].(map[string]any); task == nil || task["status"] != string(engine.TaskVerified) {
				t.Fatalf("run %d of task %s ended before its kill, not verified: %v\n%s\n%s", runs, id, st["task"], out, f.agentLogs())
			}
			tasks = append(tasks, f.create(goal))
			continue
		case <-at:
		}
		child.Process.Kill()
		<-exited
		done++
		stopped := lo.afterKill(child.Process.Pid)
		t.Logf("kill %d: task %s, %s after the %s; its containers stopped %s later", done, id, delay.Round(time.Millisecond), trigger, stopped.Round(10*time.Millisecond))
	}
	for _, id := range tasks {
		st := f.status(id)
		if task, _ := st["task"].(map[string]any); task != nil && task["status"] == string(engine.TaskVerified) {
			continue
		}
		task, stdout, stderr := f.runTask(nil, id)
		if task["status"] != string(engine.TaskVerified) {
			t.Fatalf("task %s after the loop: %v\n%s\n%s\n%s", id, task["status"], stdout, stderr, f.agentLogs())
		}
	}
	lo.final()
	led := f.ledger()
	ctx := context.Background()
	if err := led.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	takeovers := 0
	for _, id := range tasks {
		evs, err := led.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		takeovers += checkTakeovers(t, id, evs)
		if cs := containersOf(t, id); len(cs) != 0 {
			t.Errorf("containers of task %s after the loop: %v", id, cs)
		}
	}
	t.Logf("%d kills, %d tasks verified, %d takeovers recorded, %s", kills, len(tasks), takeovers, time.Since(start).Round(time.Second))
}

// TestSignalStopsTaskRun: SIGTERM and SIGINT to `bcode task run` while the
// agent's container runs a command: within 5 s the run has checkpointed,
// released the lease, removed the container and exited 130, saying which
// signal and how to resume.
func TestSignalStopsTaskRun(t *testing.T) {
	requireSandbox(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		t.Run(name, func(t *testing.T) {
			model := modeltest.New(modeltest.Options{Tools: true},
				call("terminal", jsonArgs(map[string]any{"command": "echo partial > partial.txt; sleep 300", "timeout_seconds": 600})))
			f := newFixture(t, "killloop", model, nil)
			id := f.create("Abs returns negative numbers unchanged; make it return the absolute value.")
			child, out, exited := startBcode(t, f, nil, "task", "run", id)
			deadline := time.Now().Add(5 * time.Minute)
			for len(model.Requests()) == 0 || len(containersOf(t, id, "status=running")) == 0 {
				select {
				case err := <-exited:
					t.Fatalf("bcode task run ended before the signal: %v\n%s", err, out)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the agent's turn never started\n%s", out)
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Second) // the command runs
			sent := time.Now()
			if err := child.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("bcode task run still runs 30 s after %s\n%s", name, out)
			}
			took := time.Since(sent)
			t.Logf("%s: exited %s after the signal (%v)", name, took.Round(time.Millisecond), err)
			// bcode's own bound is 5 s; the rest is the process exit.
			if took > 6*time.Second {
				t.Errorf("exit %s after %s, want within 5 s", took.Round(time.Millisecond), name)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
				t.Errorf("exit %v, want 130", err)
			}
			want := fmt.Sprintf("bcode: interrupted by %s; task %s checkpointed; resume with `bcode task resume %s`", name, id, id)
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
			if cs := containersOf(t, id); len(cs) != 0 {
				t.Errorf("containers of the task after the stop: %v", cs)
			}
			st := f.status(id)
			if task, _ := st["task"].(map[string]any); task == nil || task["status"] != string(engine.TaskBlocked) || st["lease"] != nil {
				t.Errorf("after %s: %v, lease %v; want blocked, lease released", name, st["task"], st["lease"])
			}
			evs, lerr := f.ledger().Events(context.Background(), id, 0, 0)
			if lerr != nil {
				t.Fatal(lerr)
			}
			var interrupted, committed bool
			for _, ev := range evs {
				if ev.Kind == task.EventInterrupted && strings.Contains(string(ev.Data), "interrupted by "+name) {
					interrupted = true
				}
				if ev.Kind == task.EventTurn && strings.Contains(string(ev.Data), `"commit"`) {
					committed = true
				}
			}
			if !interrupted || !committed {
				t.Errorf("task.interrupted naming %s: %v; the turn's edit committed: %v", name, interrupted, committed)
			}
		})
	}
}

// TestKillLoopPostgres: three `bcode runner` processes share one real
// PostgreSQL ledger (each with its own state directory, as on three
// machines that share a disk-less queue) and six tasks of one repository.
// A random runner is SIGKILLed 1 to 31 s after the previous kill, 10 times (3 with
// -short), and started again; then the runners work until every task is
// verified, and a SIGTERM ends each within 5 s.
func TestKillLoopPostgres(t *testing.T) {
	requireSandbox(t)
	url := pgtest.URL(t)
	kills := killCount(10, 3)
	const ntasks, nrunners = 6, 3
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	t.Logf("seed %d, %d kills, %d tasks, %d runners", seed, kills, ntasks, nrunners)
	model := modeltest.New(modeltest.Options{Tools: true, Respond: fixPolicy})
	f := newFixture(t, "killloop", model, nil)
	env := []string{"BCODE_LEDGER=" + url}
	var tasks []string
	for i := 0; i < ntasks; i++ {
		out, errOut, code := f.bcode(env, "task", "create", fmt.Sprintf("Abs returns negative numbers unchanged; make it return the absolute value (%d).", i))
		if code != 0 {
			t.Fatalf("task create: exit %d\n%s%s", code, out, errOut)
		}
		tasks = append(tasks, strings.TrimSpace(out))
	}
	type runnerProc struct {
		cmd    *exec.Cmd
		out    *output
		exited <-chan error
	}
	runners := make([]runnerProc, nrunners)
	startRunner := func(i int) {
		state := filepath.Join(f.state, fmt.Sprintf("runner-%d", i))
		cmd, out, exited := startBcode(t, f, env, "runner", "--state", state, "--poll", "200ms")
		runners[i] = runnerProc{cmd, out, exited}
	}
	for i := range runners {
		startRunner(i)
	}
	lo := &leftovers{t: t}
	start := time.Now()
	for k := 1; k <= kills; k++ {
		// Spread over the runs' whole length: preparation, turns, gate.
		delay := time.Second + time.Duration(rng.Int64N(int64(30*time.Second)))
		time.Sleep(delay)
		i := rng.IntN(nrunners)
		r := runners[i]
		select {
		case err := <-r.exited:
			t.Fatalf("runner %d ended by itself: %v\n%s", i, err, r.out)
		default:
		}
		r.cmd.Process.Kill()
		<-r.exited
		stopped := lo.afterKill(r.cmd.Process.Pid)
		t.Logf("kill %d: runner %d after %s; its containers stopped %s later", k, i, delay.Round(time.Millisecond), stopped.Round(10*time.Millisecond))
		startRunner(i)
	}
	// The runners work on until every task is verified.
	ctx := context.Background()
	st, err := postgresStore(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(25 * time.Minute) // a bound on hangs under load
	for {
		verified := 0
		for _, id := range tasks {
			tk, err := st.Task(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			switch tk.Status {
			case engine.TaskVerified:
				verified++
			case engine.TaskBlocked, engine.TaskFailed, engine.TaskCancelled:
				t.Fatalf("task %s ended %s: %s\n%s", id, tk.Status, tk.Reason, f.agentLogs())
			}
		}
		if verified == ntasks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks verified after %s", verified, ntasks, time.Since(start).Round(time.Second))
		}
		time.Sleep(time.Second)
	}
	for i, r := range runners {
		// A runner restarted just now may not have reached its signal
		// handling: a SIGTERM before its start line would end it by the
		// signal's default action, with nothing of its own to stop.
		for end := time.Now().Add(30 * time.Second); !strings.Contains(r.out.String(), "claiming tasks") && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		sent := time.Now()
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-r.exited:
			if took := time.Since(sent); took > 6*time.Second || err != nil {
				t.Errorf("runner %d after SIGTERM: exit %v in %s, want 0 within 5 s\n%s", i, err, took.Round(time.Millisecond), r.out)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("runner %d still runs 30 s after SIGTERM", i)
		}
	}
	lo.final()
	takeovers := 0
	for _, id := range tasks {
		evs, err := st.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		takeovers += checkTakeovers(t, id, evs)
		if cs := containersOf(t, id); len(cs) != 0 {
			t.Errorf("containers of task %s after the loop: %v", id, cs)
		}
	}
	t.Logf("%d kills, %d tasks verified, %d takeovers recorded, %s", kills, ntasks, takeovers, time.Since(start).Round(time.Second))
}

// postgresStore opens the loop's ledger from the test, as a reader.
func postgresStore(ctx context.Context, url string) (*postgres.Store, error) {
	return postgres.Open(ctx, url)
}
