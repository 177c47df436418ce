package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// crashChildEnv makes the test binary act as a crash-test writer: its value
// is "<ledger path>|<task id>".
const crashChildEnv = "BCODE_LEDGER_CRASH_CHILD"

// TestLedgerCrashChild is not a test of its own: TestKillMidWrite re-executes
// the test binary with -test.run selecting it and crashChildEnv set. It takes
// the task's lease (its predecessor was SIGKILLed: same boot, pid gone, so at
// once), closes the orphaned attempt, and writes fenced events, heartbeats,
// model calls and task updates in a loop until killed, printing "ack <seq>"
// after each event's Append returned.
func TestLedgerCrashChild(t *testing.T) {
	arg := os.Getenv(crashChildEnv)
	if arg == "" {
		t.Skip("helper process for TestKillMidWrite; runs only when re-executed by it")
	}
	path, taskID, _ := strings.Cut(arg, "|")
	ctx := context.Background()
	die := func(format string, args ...any) {
		fmt.Printf("error "+format+"\n", args...)
		os.Exit(3)
	}
	l, err := Open(ctx, path)
	if err != nil {
		die("open: %v", err)
	}
	lease, _, err := l.Acquire(ctx, taskID, LocalHolder(""), time.Minute)
	if err != nil {
		die("acquire: %v", err)
	}
	fmt.Printf("fence %d\n", lease.Fence)
	if _, err := l.InterruptOrphans(ctx, lease, taskID); err != nil {
		die("orphans: %v", err)
	}
	attempt, err := l.StartAttempt(ctx, lease, taskID)
	if err != nil {
		die("attempt: %v", err)
	}
	for i := 0; ; i++ {
		data, _ := json.Marshal(map[string]int64{"fence": lease.Fence, "i": int64(i)})
		seq, err := l.Append(ctx, &lease, &engine.Event{TaskID: taskID, Attempt: attempt.ID, Kind: "crash.tick", Data: data})
		if err != nil {
			die("append: %v", err)
		}
		fmt.Printf("ack %d %d\n", seq, i)
		switch i % 5 {
		case 1:
			if lease, err = l.Heartbeat(ctx, lease, time.Minute); err != nil {
				die("heartbeat: %v", err)
			}
		case 2:
			if _, err := l.RecordModelCall(ctx, lease, &engine.ModelCall{Attempt: attempt.ID, Model: "m", PromptTokens: i}); err != nil {
				die("model call: %v", err)
			}
		case 3:
			task, err := l.Task(ctx, taskID)
			if err != nil {
				die("task: %v", err)
			}
			task.Status, task.Reason = engine.TaskRunning, fmt.Sprintf("tick %d", i)
			if err := l.UpdateTask(ctx, lease, task); err != nil {
				die("update: %v", err)
			}
		}
	}
}

// TestKillMidWrite SIGKILLs a writing child process at random moments, over
// and over, and checks after each kill that the ledger passes
// integrity_check, that every event the child acknowledged is there with its
// data, and that each new child got a larger fence.
func TestKillMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for a few seconds; run without -short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	setup := openAt(t, path)
	task := newTask(t, setup, "/r", "crash")
	setup.Close()

	// 20 kills keep the test near five seconds; BCODE_LEDGER_KILLS=N soaks.
	rounds := 20
	if n, err := strconv.Atoi(os.Getenv("BCODE_LEDGER_KILLS")); err == nil && n > 0 {
		rounds = n
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	acked := map[int64]string{} // seq -> expected data
	var lastFence int64
	totalAcks, noLease := 0, 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path+"|"+task.ID)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Half the rounds die after a number of acknowledgements, half after
		// a random time, which lands anywhere inside a transaction.
		killAfterAcks := 1 + rng.IntN(60)
		if round%2 == 1 {
			killAfterAcks = -1
			delay := time.Duration(30+rng.IntN(300)) * time.Millisecond
			timer := time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
			defer timer.Stop()
		}

		var fence int64
		acks := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "fence":
				fence, _ = strconv.ParseInt(f[1], 10, 64)
			case len(f) == 3 && f[0] == "ack":
				seq, err1 := strconv.ParseInt(f[1], 10, 64)
				i, err2 := strconv.ParseInt(f[2], 10, 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("round %d: bad line %q", round, sc.Text())
				}
				acked[seq] = fmt.Sprintf(`{"fence":%d,"i":%d}`, fence, i)
				acks++
				if acks == killAfterAcks {
					cmd.Process.Signal(syscall.SIGKILL)
				}
			default:
				// A line cut short by the kill is not an acknowledgement.
				if strings.HasPrefix(sc.Text(), "error") {
					t.Fatalf("round %d: child: %s", round, sc.Text())
				}
			}
		}
		if acks < killAfterAcks {
			// The child died before the kill without reporting an error.
			cmd.Process.Signal(syscall.SIGKILL)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, not by SIGKILL", round, err)
		}
		switch {
		case fence == 0 && acks > 0:
			t.Fatalf("round %d: acknowledgements without a fence", round)
		case fence == 0:
			noLease++ // killed before it reported its lease
		case fence <= lastFence:
			t.Fatalf("round %d: fence %d after %d: not strictly increasing", round, fence, lastFence)
		default:
			lastFence = fence
		}
		totalAcks += acks

		// Restart: a fresh open of what the dead child left behind.
		l, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("round %d: reopening after the kill: %v", round, err)
		}
		if err := l.IntegrityCheck(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		evs, err := l.Events(ctx, task.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		have := map[int64]string{}
		var prev int64
		for _, e := range evs {
			if e.Seq <= prev {
				t.Fatalf("round %d: events out of order: %d after %d", round, e.Seq, prev)
			}
			prev = e.Seq
			have[e.Seq] = string(e.Data)
		}
		for seq, data := range acked {
			if got, ok := have[seq]; !ok || got != data {
				t.Fatalf("round %d: acknowledged event %d lost or changed: have %q, want %q", round, seq, got, data)
			}
		}
		l.Close()
	}

	// A last take-over, as a restarted runner would do, closes every
	// attempt the children left running: none may stay running, and the
	// attempt numbers have no gaps and no repeats.
	l := openAt(t, path)
	lease, prev, err := l.Acquire(ctx, task.ID, LocalHolder("recovery"), time.Minute)
	if err != nil {
		t.Fatalf("taking over from the last dead child: %v", err)
	}
	if prev == nil || lease.Fence <= lastFence {
		t.Errorf("recovery lease %+v after fence %d, prev %+v", lease, lastFence, prev)
	}
	if _, err := l.InterruptOrphans(ctx, lease, task.ID); err != nil {
		t.Fatal(err)
	}
	atts, err := l.Attempts(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range atts {
		if a.Number != i+1 || a.Status != engine.AttemptInterrupted {
			t.Errorf("attempt %d: number %d, status %s; want %d, interrupted", i, a.Number, a.Status, i+1)
		}
	}
	if err := l.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	t.Logf("%d kills (%d before the child reported its lease), %d acknowledged events all present, %d attempts, last fence %d",
		rounds, noLease, totalAcks, len(atts), lastFence)
}
