package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
)

const envSignalChild = "BCODE_SIGNAL_CHILD"

// TestSignalChild is the runner TestCtrlC interrupts: it wires SIGINT and
// SIGTERM to the run's context exactly as cmd/bcode does.
func TestSignalChild(t *testing.T) {
	if os.Getenv(envSignalChild) != "1" {
		t.Skip("runs only as TestCtrlC's child runner")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	led, err := ledger.Open(ctx, os.Getenv(envLedger))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	e := task.New(led)
	e.TTL = 20 * time.Second
	started := make(chan int, 1)
	go func() {
		for n := range started {
			fmt.Printf("turn %d\n", n)
		}
	}()
	r := &Runner{Engine: e, Agent: &scriptAgent{block: true, started: started}, Checker: fileChecker{}}
	_, err = r.Run(ctx, os.Getenv(envTask))
	fmt.Printf("done %v\n", err)
	if !errors.Is(err, ErrStopped) {
		os.Exit(5)
	}
	os.Exit(0)
}

func TestCtrlC(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t, nil)
			e := newEngine(t, 20*time.Second)
			tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 3, MaxTurns: 10})
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), envSignalChild+"=1", envLedger+"="+e.Ledger.(*ledger.Ledger).Path(), envTask+"="+tk.ID)
			out, _ := cmd.StdoutPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
				if sc.Text() == "turn 1" {
					time.Sleep(50 * time.Millisecond) // the turn has written its first line
					cmd.Process.Signal(sig)
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v\n%s\n%s", err, strings.Join(lines, "\n"), stderr.String())
			}
			st, err := e.Status(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st.Task.Status != engine.TaskBlocked || !strings.Contains(st.Task.Reason, "interrupted") || st.Lease != nil {
				t.Fatalf("after %s: status %s (%s), lease %+v; want blocked as interrupted, lease released", sig, st.Task.Status, st.Task.Reason, st.Lease)
			}
			if len(st.Attempts) != 1 || st.Attempts[0].Status != engine.AttemptInterrupted {
				t.Errorf("attempts %+v, want one interrupted", st.Attempts)
			}
			evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
			last := evs[len(evs)-1]
			if last.Kind != task.EventInterrupted {
				t.Fatalf("events end %v, want task.interrupted", kinds(evs))
			}
			var d struct{ Signal, Phase, Head string }
			json.Unmarshal(last.Data, &d)
			if d.Phase != "agent turns" || d.Head == "" {
				t.Errorf("task.interrupted data %s", last.Data)
			}
			// What the interrupted turn changed is committed.
			if got := gitCmd(t, repo, "show", tk.Branch+":work.txt"); got != "attempt 1 turn 1" {
				t.Errorf("work.txt on the branch = %q", got)
			}
			// And it resumes.
			if _, err := e.Resume(ctx, tk.ID, engine.Budgets{}); err != nil {
				t.Fatal(err)
			}
			res, err := (&Runner{Engine: e, Agent: &scriptAgent{doneAfter: 1}, Checker: fileChecker{}}).Run(ctx, tk.ID)
			if err != nil || res.Task.Status != engine.TaskVerified {
				t.Fatalf("resumed run: %v %+v", err, res)
			}
		})
	}
}

// A lease whose holder ran before a reboot (another boot id) goes stale by
// its TTL only: its pid means nothing now, dead or alive. After the TTL the
// next runner takes over, and since the holder ran on this host before the
// boot it is known dead: its stale index.lock is removed and its
// uncommitted edits are kept as a recovery commit.
func TestRebootSimulation(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	ttl := 1500 * time.Millisecond
	e := newEngine(t, ttl)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 3, MaxTurns: 10})
	host, _ := os.Hostname()
	before := ledger.Holder{Owner: host + "/999999/beforereboot", PID: 999999, BootID: "boot-before-the-reboot"}
	oldLease, _, err := e.Ledger.Acquire(ctx, tk.ID, before, ttl)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := e.PrepareWorktree(ctx, tk, oldLease, task.Limits(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ledger.StartAttempt(ctx, oldLease, tk.ID); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(wt.Dir+"/unsaved.txt", []byte("work in progress\n"), 0o644)
	lock := wt.GitDir + "/index.lock"
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	acquiredAt := time.Now()

	me := ledger.LocalHolder("")
	if _, _, err := e.Claim(ctx, tk.ID, me); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("claim before the TTL: %v, want ErrLeaseHeld (pid 999999 is gone, but from another boot)", err)
	}
	time.Sleep(time.Until(acquiredAt.Add(ttl + 100*time.Millisecond)))
	lease, rec, err := e.Claim(ctx, tk.ID, me)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Ledger.Release(ctx, lease)
	if !rec.HolderDead || rec.PreviousOwner != before.Owner || rec.PreviousFence != oldLease.Fence {
		t.Errorf("recovery %+v", rec)
	}
	if len(rec.RemovedLocks) != 1 || rec.RemovedLocks[0] != lock {
		t.Errorf("removed locks %v, want %s", rec.RemovedLocks, lock)
	}
	if len(rec.Orphaned) != 1 || rec.Orphaned[0] != 1 {
		t.Errorf("orphaned %v, want attempt 1", rec.Orphaned)
	}
	if rec.RecoveryCommit == "" || strings.Join(rec.RecoveredFiles, ",") != "unsaved.txt" {
		t.Fatalf("recovery commit %q files %v", rec.RecoveryCommit, rec.RecoveredFiles)
	}
	if got := gitCmd(t, repo, "show", tk.Branch+":unsaved.txt"); got != "work in progress" {
		t.Errorf("unsaved.txt on the branch = %q", got)
	}
	msg := gitCmd(t, repo, "show", "-s", "--format=%B", rec.RecoveryCommit)
	if tr := task.ParseTrailers(msg); tr.Task != tk.ID || tr.Recovery != oldLease.Fence || tr.Fence != lease.Fence {
		t.Errorf("recovery trailers %+v from %q", tr, msg)
	}
	evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
	var got *task.Recovery
	for _, ev := range evs {
		if ev.Kind == task.EventRecovered {
			got = &task.Recovery{}
			json.Unmarshal(ev.Data, got)
		}
	}
	if got == nil || got.PreviousOwner != before.Owner || got.LastHeartbeat.IsZero() || got.Phase == "" || len(got.Orphaned) != 1 {
		t.Errorf("task.recovered event %+v", got)
	}
}

// A holder on another machine whose lease went stale may still be alive:
// it is not known dead, so its index.lock would not be removed; its edits
// are still kept.
func TestStaleLeaseOfAnotherHost(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	ttl := time.Second
	e := newEngine(t, ttl)
	tk := createTask(t, e, repo, engine.Budgets{MaxAttempts: 3, MaxTurns: 10})
	other := ledger.Holder{Owner: "elsewhere/4242/x", PID: 4242, BootID: "another-machine"}
	old, _, err := e.Ledger.Acquire(ctx, tk.ID, other, ttl)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := e.PrepareWorktree(ctx, tk, old, task.Limits(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(wt.Dir+"/calc.txt", []byte("changed elsewhere\n"), 0o644)
	time.Sleep(ttl + 100*time.Millisecond)
	lease, rec, err := e.Claim(ctx, tk.ID, ledger.LocalHolder(""))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Ledger.Release(ctx, lease)
	if rec.HolderDead {
		t.Error("a holder on another host was judged dead")
	}
	if rec.RecoveryCommit == "" || gitCmd(t, repo, "show", tk.Branch+":calc.txt") != "changed elsewhere" {
		t.Errorf("edits not kept: %+v", rec)
	}
	// The old holder, fenced out, can no longer write to the ledger.
	if _, err := e.Ledger.Append(ctx, &old, &engine.Event{TaskID: tk.ID, Kind: "late.write"}); !errors.Is(err, engine.ErrFenced) {
		t.Errorf("fenced-out append: %v, want ErrFenced", err)
	}
}
