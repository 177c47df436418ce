package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/engine/task"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The shared kill loop: two runner processes (Worker.Serve, as `bcode
// runner` runs it), each with its own state directory, share one real
// PostgreSQL ledger and claim tasks from it. Runner "local" is this
// machine; runner "remote" stands for another machine (its own host name
// and boot id), so its dead leases can only be taken over by TTL from
// "local", while its own restarts see its pid and take over at once. The
// parent SIGKILLs them at random times and at armed crash points, restarts
// them, and keeps the queue fed. Checked throughout and at the end: every
// acknowledged event is in the ledger, each task's fences grow strictly
// from claim to claim, no write of an older fence lands after a newer
// fence wrote (no task is run by two runners at once), and once the kills
// stop every task ends verified.

const (
	envSharedChild = "BCODE_SHAREDKILL_CHILD" // "local" or "remote"
	envSharedURL   = "BCODE_SHAREDKILL_URL"
	envSharedState = "BCODE_SHAREDKILL_STATE"
)

// sharedTTL: short enough that a dead remote runner's task is taken over
// within a few seconds, long enough for heartbeats on a loaded CI machine.
const sharedTTL = 3 * time.Second

const sharedEndpoint = "http://gpu.invalid:8080"

func TestSharedKillLoopChild(t *testing.T) {
	who := os.Getenv(envSharedChild)
	if who == "" {
		t.Skip("runs only as the shared kill loop's runner")
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv(envSharedURL))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	// The parent's kill timer starts here: the time a child takes to
	// start is not time it could be killed while working.
	fmt.Fprintln(os.Stdout, "ready")
	e := task.New(st)
	e.StateDir, e.TTL, e.Poll = os.Getenv(envSharedState), sharedTTL, 50*time.Millisecond
	holder := ledger.LocalHolder("")
	if who == "remote" {
		pid := os.Getpid()
		holder = ledger.Holder{Owner: fmt.Sprintf("machine-b/%d/%d", pid, time.Now().UnixNano()%1e6),
			Host: "machine-b", PID: pid, BootID: "boot-of-machine-b", StartTime: holder.StartTime}
	}
	e.Holder = holder
	var out sync.Mutex
	w := &Worker{Engine: e, Holder: holder, Poll: 50 * time.Millisecond,
		Build: func(ctx context.Context, t engine.Task) (*Runner, error) {
			return &Runner{Agent: &scriptAgent{doneAfter: 2, delay: 20 * time.Millisecond}, Checker: fileChecker{},
				Endpoint: sharedEndpoint, SessionPoll: 20 * time.Millisecond,
				OnEvent: func(ev engine.Event) {
					out.Lock()
					defer out.Unlock()
					// Printed after Append returned: an acknowledged event.
					fmt.Fprintf(os.Stdout, "ack %d %s %d %s\n", ev.Seq, ev.Kind, ev.Fence, ev.TaskID)
				}}, nil
		},
		OnResult: func(res *Result, err error) {
			if err != nil && !errors.Is(err, engine.ErrFenced) {
				fmt.Fprintln(os.Stderr, "run:", err)
			}
		}}
	w.Serve(ctx)
	os.Exit(0)
}

type sharedStats struct {
	mu                         sync.Mutex
	kills, pointKills, randoms int
	perRunner                  map[string]int
	acked                      map[int64]string   // seq -> task/kind
	claims                     map[string][]int64 // fences each task's acknowledged events carried
}

// sharedRepoFiles is each task's base: budgets no kill loop runs out of.
var sharedRepoFiles = map[string]string{
	"README.md": "hello\n", "calc.txt": "one\ntwo\nthree\n",
	".bcode/config.toml": "[task]\nmax_attempts = 1048576\nmax_turns = 1048576\nwall_clock = \"24h\"\n",
}

func TestSharedKillLoop(t *testing.T) {
	if os.Getenv(envSharedChild) != "" {
		t.Skip("child")
	}
	target := 200
	if testing.Short() {
		target = 30
	}
	if v, err := strconv.Atoi(os.Getenv(envKills)); err == nil && v > 0 {
		target = v
	}
	url := pgtest.URL(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetEndpointLimit(ctx, sharedEndpoint, 2); err != nil {
		t.Fatal(err)
	}
	e := task.New(st)
	e.StateDir, e.TTL = t.TempDir(), sharedTTL
	seed := uint64(time.Now().UnixNano())
	t.Logf("shared kill loop seed %d, target %d kills", seed, target)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	var rngMu sync.Mutex
	intN := func(n int) int { rngMu.Lock(); defer rngMu.Unlock(); return rng.IntN(n) }

	var tasks []string
	feed := func() {
		// Keep a few tasks runnable, each in its own repository.
		all, err := st.Tasks(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, tk := range all {
			if ledger.Runnable(tk.Status) {
				open++
			}
		}
		for ; open < 4; open++ {
			// The budgets come from the base's config, as a user's would:
			// a setup claim here would race the runners already polling.
			tk := createTask(t, e, newRepo(t, sharedRepoFiles), engine.Budgets{})
			tasks = append(tasks, tk.ID)
		}
	}
	feed()

	stats := &sharedStats{perRunner: map[string]int{}, acked: map[int64]string{}, claims: map[string][]int64{}}
	states := map[string]string{"local": t.TempDir(), "remote": t.TempDir()}
	start := time.Now()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	failed := make(chan error, 2)
	for _, who := range []string{"local", "remote"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				point := ""
				if intN(2) == 0 {
					p := crashpoint.Points[intN(len(crashpoint.Points))]
					point = fmt.Sprintf("%s:%d", p, 1+intN(2))
				}
				delay := time.Duration(200+intN(1800)) * time.Millisecond
				if intN(4) == 0 {
					// A longer life now and then, so tasks also finish
					// (and reach the later crash points) while the kills go on.
					delay = time.Duration(2500+intN(2500)) * time.Millisecond
				}
				if err := sharedChild(who, url, states[who], point, delay, stats, stop); err != nil {
					failed <- err
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(15 * time.Minute)
	for {
		stats.mu.Lock()
		k := stats.kills
		stats.mu.Unlock()
		if k >= target {
			break
		}
		select {
		case err := <-failed:
			close(stop)
			wg.Wait()
			t.Fatal(err)
		case <-time.After(300 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("only %d kills in 15 minutes", k)
		}
		feed()
		checkShared(t, st, stats)
	}
	close(stop)
	wg.Wait()
	killed := time.Since(start)

	// Drain: one undisturbed runner of each kind until every task ends.
	drainStart := time.Now()
	done := make(chan struct{})
	var dwg sync.WaitGroup
	for _, who := range []string{"local", "remote"} {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			if err := sharedChild(who, url, states[who], "", 0, stats, done); err != nil {
				failed <- err
			}
		}()
	}
	for {
		all, err := st.Tasks(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, tk := range all {
			if tk.Status != engine.TaskVerified {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Since(drainStart) > 3*time.Minute {
			close(done)
			dwg.Wait()
			var why []string
			for _, tk := range all {
				if tk.Status == engine.TaskVerified {
					continue
				}
				l, _ := st.Lease(ctx, tk.ID)
				evs, _ := st.Events(ctx, tk.ID, 0, 0)
				var last []string
				for _, ev := range evs[max(0, len(evs)-6):] {
					last = append(last, fmt.Sprintf("%d %s f%d %s", ev.Seq, ev.Kind, ev.Fence, ev.Data))
				}
				why = append(why, fmt.Sprintf("task %s is %s (%s), lease %+v, last events:\n  %s", tk.ID, tk.Status, tk.Reason, l, strings.Join(last, "\n  ")))
			}
			t.Fatalf("%d of %d tasks never ended verified after the kills stopped:\n%s", left, len(all), strings.Join(why, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(done)
	dwg.Wait()
	checkShared(t, st, stats)

	var maxClaims int
	totalClaims := 0
	for _, f := range stats.claims {
		totalClaims += len(f)
		maxClaims = max(maxClaims, len(f))
	}
	t.Logf("shared kill loop: %d SIGKILLs (%d at crash points, %d at random times; local %d, remote %d) in %s; %d tasks all verified (drain %s); %d acknowledged events all present; %d claims, fences strictly increasing per task (up to %d claims of one task); no fence wrote after a newer one",
		stats.kills, stats.pointKills, stats.randoms, stats.perRunner["local"], stats.perRunner["remote"], killed.Round(time.Second),
		len(tasks), time.Since(drainStart).Round(time.Millisecond), len(stats.acked), totalClaims, maxClaims)
}

// sharedChild runs one runner process until it dies: killed at its armed
// crash point, SIGKILLed after delay, or (delay 0) SIGKILLed when stop
// closes, which is not counted.
func sharedChild(who, url, state, point string, delay time.Duration, stats *sharedStats, stop <-chan struct{}) error {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedKillLoopChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envSharedChild+"="+who, envSharedURL+"="+url, envSharedState+"="+state, crashpoint.Env+"="+point)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	byUs := make(chan bool, 1)
	ready := make(chan struct{})
	go func() {
		var t <-chan time.Time
		select {
		case <-ready:
		case <-stop:
			byUs <- false
			cmd.Process.Signal(syscall.SIGKILL)
			return
		}
		if delay > 0 {
			t = time.After(delay)
		}
		select {
		case <-t:
			byUs <- true
		case <-stop:
			byUs <- false
		}
		cmd.Process.Signal(syscall.SIGKILL)
	}()
	childFence := map[string]int64{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "ready" {
			close(ready)
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[0] != "ack" {
			continue
		}
		seq, _ := strconv.ParseInt(f[1], 10, 64)
		fence, _ := strconv.ParseInt(f[3], 10, 64)
		tid := f[4]
		stats.mu.Lock()
		stats.acked[seq] = tid + "/" + f[2]
		if childFence[tid] != fence {
			childFence[tid] = fence
			stats.claims[tid] = append(stats.claims[tid], fence)
		}
		stats.mu.Unlock()
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("runner %s exited by itself (%v): %s", who, err, stderr.String())
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return fmt.Errorf("runner %s failed: %v\n%s", who, err, stderr.String())
	}
	stats.mu.Lock()
	defer stats.mu.Unlock()
	select {
	case byTimer := <-byUs:
		if !byTimer {
			return nil // stopped by the test, not a kill
		}
		stats.randoms++
	default:
		stats.pointKills++ // it killed itself at its armed crash point
	}
	stats.kills++
	stats.perRunner[who]++
	return nil
}

// checkShared: every acknowledged event is in the ledger with its task and
// kind, and in each task's events, taken in seq order, the fence never
// goes down: once a newer holder wrote, no older one did.
func checkShared(t *testing.T, st ledger.Store, stats *sharedStats) {
	t.Helper()
	// The acknowledgements first, then the ledger: an event acknowledged
	// after the read would otherwise look lost.
	stats.mu.Lock()
	acked := make(map[int64]string, len(stats.acked))
	for k, v := range stats.acked {
		acked[k] = v
	}
	stats.mu.Unlock()
	all, err := st.Events(context.Background(), "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	have := make(map[int64]string, len(all))
	maxFence := map[string]int64{}
	started := map[string]int64{}
	for _, ev := range all {
		have[ev.Seq] = ev.TaskID + "/" + string(ev.Kind)
		if ev.Fence == 0 {
			continue
		}
		// Every claim that got going says so first: in commit order the
		// claims' fences strictly increase.
		if ev.Kind == task.EventStarted {
			if ev.Fence <= started[ev.TaskID] {
				t.Fatalf("task %s: a runner started under fence %d after fence %d had: fences must strictly increase", ev.TaskID, ev.Fence, started[ev.TaskID])
			}
			started[ev.TaskID] = ev.Fence
		}
		if ev.Fence < maxFence[ev.TaskID] {
			t.Fatalf("task %s: event %d (%s) of fence %d landed after fence %d wrote: two runners ran it at once", ev.TaskID, ev.Seq, ev.Kind, ev.Fence, maxFence[ev.TaskID])
		}
		maxFence[ev.TaskID] = ev.Fence
	}
	for seq, what := range acked {
		if have[seq] != what {
			t.Fatalf("acknowledged event %d (%s) is lost: the ledger has %q", seq, what, have[seq])
		}
	}
}
