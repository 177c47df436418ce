package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/engine/task"
)

// The kill loop: this test binary re-executes itself as a runner
// (TestKillLoopChild), and the parent SIGKILLs it at random times and at
// every enumerated crash point, then either takes the task over itself and
// checks the recovery in detail, or lets the next child runner take over.
// After every child it checks that no acknowledged event was lost, fences
// only grew, no turn has two checkpoint commits, every commit on the branch
// is recorded, and the ledger passes PRAGMA integrity_check.

const (
	envChild  = "BCODE_KILLLOOP_CHILD"
	envLedger = "BCODE_KILLLOOP_LEDGER"
	envTask   = "BCODE_KILLLOOP_TASK"
	envKills  = "BCODE_KILLS"
)

// killLoopTTL is long enough that only the dead-pid rule, never expiry,
// explains the immediate takeovers the loop asserts.
const killLoopTTL = 20 * time.Second

func TestKillLoopChild(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as the kill loop's child runner")
	}
	ctx := context.Background()
	led, err := ledger.Open(ctx, os.Getenv(envLedger))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e := task.New(led)
	e.TTL = killLoopTTL
	r := &Runner{Engine: e, Agent: &scriptAgent{doneAfter: 2}, Checker: fileChecker{},
		OnEvent: func(ev engine.Event) {
			// Written after Append returned: an acknowledged event.
			fmt.Fprintf(os.Stdout, "ack %d %s %d\n", ev.Seq, ev.Kind, ev.Fence)
		}}
	if _, err := r.Run(ctx, os.Getenv(envTask)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	os.Exit(0)
}

type killStats struct {
	kills, crashPointKills, randomKills, parentTakeovers, childTakeovers int
	recoveryCommits, adopted, removedLocks, finishedTasks                int
	perPoint                                                             map[string]int
	elapsed                                                              time.Duration
}

func TestKillLoop(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		t.Skip("child")
	}
	target := 200
	if testing.Short() {
		target = 40
	}
	if v, err := strconv.Atoi(os.Getenv(envKills)); err == nil && v > 0 {
		target = v
	}
	st := killLoop(t, target, 0)
	t.Logf("kill loop: %d kills (%d at crash points, %d at random times) in %s; %d takeovers by the checking parent, %d by the next runner; %d recovery commits, %d adopted commits, %d stale index.lock removed (all takeovers); %d tasks verified along the way",
		st.kills, st.crashPointKills, st.randomKills, st.elapsed.Round(time.Millisecond), st.parentTakeovers, st.childTakeovers,
		st.recoveryCommits, st.adopted, st.removedLocks, st.finishedTasks)
	t.Logf("kills per crash point: %v", st.perPoint)
}

// killLanes is how many task chains run side by side, each in its own
// repository, all in one ledger file: four processes contend for its write
// lock while they are being killed.
const killLanes = 4

// killLoop runs until target kills in all; seed 0 picks one (logged).
func killLoop(t testing.TB, target int, seed uint64) killStats {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill loop seed %d", seed)
	e := newEngine(t, killLoopTTL)
	repos := make([]string, killLanes)
	for i := range repos {
		repos[i] = newRepo(t, nil)
	}
	start := time.Now()
	results := make(chan laneResult, killLanes)
	for lane := range killLanes {
		n := target / killLanes
		if lane < target%killLanes {
			n++
		}
		go func() {
			st, err := killLane(t, e, repos[lane], n, seed+uint64(lane))
			results <- laneResult{st, err}
		}()
	}
	total := killStats{perPoint: map[string]int{}}
	var errs []error
	for range killLanes {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		total.kills += r.st.kills
		total.crashPointKills += r.st.crashPointKills
		total.randomKills += r.st.randomKills
		total.parentTakeovers += r.st.parentTakeovers
		total.childTakeovers += r.st.childTakeovers
		total.recoveryCommits += r.st.recoveryCommits
		total.adopted += r.st.adopted
		total.removedLocks += r.st.removedLocks
		total.finishedTasks += r.st.finishedTasks
		for k, v := range r.st.perPoint {
			total.perPoint[k] += v
		}
	}
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	total.elapsed = time.Since(start)
	// What the takeovers (the parent's and the runners') did, from the
	// ledger itself.
	all, err := e.Ledger.Events(context.Background(), "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	total.recoveryCommits, total.adopted, total.removedLocks = 0, 0, 0
	for _, ev := range all {
		switch ev.Kind {
		case task.EventRecoveryCommit:
			total.recoveryCommits++
		case task.EventAdopted:
			total.adopted++
		case task.EventRecovered:
			var rec task.Recovery
			if json.Unmarshal(ev.Data, &rec) == nil {
				total.removedLocks += len(rec.RemovedLocks)
			}
		}
	}
	return total
}

type laneResult struct {
	st  killStats
	err error
}

// laneFatal carries a failed invariant out of a lane's goroutine.
type laneFatal struct{ err error }

// killLane kills the runners of one chain of tasks target times.
func killLane(tb testing.TB, e *task.Engine, repo string, target int, seed uint64) (st killStats, err error) {
	t := &laneT{TB: tb}
	defer func() {
		if r := recover(); r != nil {
			lf, ok := r.(laneFatal)
			if !ok {
				panic(r)
			}
			err = lf.err
		}
	}()
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	ctx := context.Background()
	budgets := engine.Budgets{MaxAttempts: 1 << 20, MaxTurns: 1 << 20, WallClock: 24 * time.Hour}
	tk := createTask(t, e, repo, budgets)
	parent := ledger.LocalHolder("kill-loop-parent")

	st = killStats{perPoint: map[string]int{}}
	acked := map[int64]string{}
	var lastFence int64
	for i := 0; st.kills < target; i++ {
		if i > target*4 {
			t.Fatalf("after %d children only %d kills", i, st.kills)
		}
		point := ""
		var delay time.Duration
		if i%2 == 0 {
			p := crashpoint.Points[(i/2)%len(crashpoint.Points)]
			point = fmt.Sprintf("%s:%d", p, 1+rng.IntN(2))
		} else {
			delay = time.Duration(20+rng.IntN(1200)) * time.Millisecond
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillLoopChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"=1", envLedger+"="+e.Ledger.(*ledger.Ledger).Path(), envTask+"="+tk.ID, crashpoint.Env+"="+point)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if delay > 0 {
			timer := time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
			defer timer.Stop()
		}
		var childFence int64
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ack" {
				continue
			}
			seq, _ := strconv.ParseInt(f[1], 10, 64)
			fence, _ := strconv.ParseInt(f[3], 10, 64)
			acked[seq] = f[2]
			if childFence == 0 {
				childFence = fence
				if fence <= lastFence {
					t.Fatalf("child %d: fence %d after fence %d: not strictly increasing\n%s", i, fence, lastFence, strings.Join(lines, "\n"))
				}
				lastFence = fence
			}
			if engine.EventKind(f[2]) == task.EventRecovered {
				st.childTakeovers++
			}
		}
		err = cmd.Wait()
		killed := false
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killed = true
			} else {
				t.Fatalf("child %d (%s) failed: %v\n%s", i, point, err, stderr.String())
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if killed {
			st.kills++
			if point != "" {
				st.crashPointKills++
				st.perPoint[strings.Split(point, ":")[0]]++
			} else {
				st.randomKills++
			}
		}
		checkLedger(t, e, tk, acked)
		if killed && rng.IntN(2) == 0 {
			fence := parentTakeover(t, e, tk, parent, &st)
			if fence <= lastFence {
				t.Fatalf("parent takeover after child %d (%s, killed %v): fence %d after %d\n%s\n%s", i, point, killed, fence, lastFence, stderr.String(), strings.Join(lines, "\n"))
			}
			lastFence = fence
			checkLedger(t, e, tk, acked)
		}
		cur, err := e.Ledger.Task(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status == engine.TaskVerified {
			st.finishedTasks++
			tk = createTask(t, e, repo, budgets)
			lastFence = 0 // fences are per task
		} else if cur.Status != engine.TaskRunning && cur.Status != engine.TaskQueued {
			t.Fatalf("task %s is %s (%s) after child %d", tk.ID, cur.Status, cur.Reason, i)
		}
	}
	return st, nil
}

// laneT turns Fatalf into a panic the lane recovers, since t.Fatal must
// not be called from another goroutine.
type laneT struct{ testing.TB }

func (l *laneT) Fatalf(format string, args ...any) {
	panic(laneFatal{fmt.Errorf(format, args...)})
}

func (l *laneT) Fatal(args ...any) { panic(laneFatal{errors.New(fmt.Sprint(args...))}) }

func (l *laneT) Helper() {}

// checkLedger: every acknowledged event is there with its kind; the ledger
// file is intact; on the branch no (attempt, turn) has two commits and
// every commit is recorded.
func checkLedger(t *laneT, e *task.Engine, tk *engine.Task, acked map[int64]string) {
	t.Helper()
	ctx := context.Background()
	if err := e.Ledger.(*ledger.Ledger).IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := e.Ledger.Events(ctx, "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	have := make(map[int64]string, len(all))
	for _, ev := range all {
		have[ev.Seq] = string(ev.Kind)
	}
	for seq, kind := range acked {
		if have[seq] != kind {
			t.Fatalf("acknowledged event %d (%s) is lost: the ledger has %q", seq, kind, have[seq])
		}
	}
	evs, err := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	recorded := task.RecordedCommits(evs)
	if out, err := gitOut(tk.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+tk.Branch); err != nil || out == "" {
		return
	}
	log := gitCmd(t, tk.Repo, "log", "--format=%H %(trailers:key=Bcode-Attempt,key=Bcode-Turn,valueonly,separator=/)", tk.Base+".."+tk.Branch)
	turns := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		id, tr, _ := strings.Cut(line, " ")
		if id == "" {
			continue
		}
		if tr != "" {
			if prev, dup := turns[tr]; dup {
				t.Fatalf("turn %s has two checkpoint commits: %s and %s", tr, prev, id)
			}
			turns[tr] = id
		}
		_ = recorded // unrecorded commits are allowed only until the next takeover adopts them
	}
}

// parentTakeover is the second runner: it claims the task the killed
// child held (at once: same boot, pid gone), and checks that the branch
// now ends at the last recorded commit, and that the dead runner's
// uncommitted edits are in it as a recovery commit, nothing discarded.
func parentTakeover(t *laneT, e *task.Engine, tk *engine.Task, holder ledger.Holder, st *killStats) int64 {
	t.Helper()
	ctx := context.Background()
	before, err := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	lastBefore := lastRecordedCommit(before)
	dead, deadFiles := newestWorktree(t, e, tk.ID)
	lease, rec, err := e.Claim(ctx, tk.ID, holder)
	if err != nil {
		t.Fatalf("takeover of a dead runner's task: %v (the dead pid should be detected at once)", err)
	}
	defer e.Ledger.Release(ctx, lease)
	st.parentTakeovers++
	st.adopted += len(rec.Adopted)
	st.removedLocks += len(rec.RemovedLocks)
	after, err := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	head := ""
	if out, err := gitOut(tk.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+tk.Branch); err == nil {
		head = strings.TrimSpace(out)
	}
	last := lastRecordedCommit(after)
	if last == "" && head != "" {
		last = tk.Base // nothing committed yet: the branch is at its base
	}
	if head != last {
		t.Fatalf("after takeover the branch is at %s but the last recorded commit is %s\nrecovery %+v\nevents %v", head, last, rec, kinds(after))
	}
	recorded := task.RecordedCommits(after)
	if head != "" {
		for _, c := range strings.Fields(gitCmd(t, tk.Repo, "rev-list", tk.Base+".."+head)) {
			if !recorded[c] {
				t.Fatalf("commit %s on the branch is not recorded after takeover", c)
			}
		}
	}
	if rec.RecoveryCommit != "" {
		st.recoveryCommits++
		parentOf := gitCmd(t, tk.Repo, "rev-parse", rec.RecoveryCommit+"^")
		wantParent := lastBefore
		if n := len(rec.Adopted); n > 0 {
			wantParent = rec.Adopted[n-1]
		}
		if wantParent != "" && parentOf != wantParent {
			t.Fatalf("recovery commit %s sits on %s, not on the last recorded commit %s", rec.RecoveryCommit, parentOf, wantParent)
		}
	}
	if dead != "" && deadFiles != nil && head != "" {
		// Worktree = last recorded commit + recovery commit: recovery left
		// the dead runner's files as they were, and they are now exactly
		// the branch head's tree (the worktree is clean and on that head).
		_, now := newestWorktree(t, e, tk.ID)
		if fmt.Sprint(now) != fmt.Sprint(deadFiles) {
			t.Fatalf("recovery changed the dead runner's files:\nbefore %v\nafter  %v", deadFiles, now)
		}
		if out := gitCmd(t, dead, "status", "--porcelain", "--untracked-files=all"); out != "" {
			t.Fatalf("the dead runner's worktree is not clean after recovery:\n%s", out)
		}
		if wtHead := gitCmd(t, dead, "rev-parse", "HEAD"); wtHead != head {
			t.Fatalf("the dead runner's worktree is at %s, the branch at %s", wtHead, head)
		}
	}
	return lease.Fence
}

// newestWorktree reads the files of the task's newest worktree (the one
// the dead runner used), or nil when it has none or its creation never
// finished.
func newestWorktree(t testing.TB, e *task.Engine, taskID string) (string, map[string]string) {
	ents, _ := os.ReadDir(e.WorktreeRoot())
	var best string
	var bestFence int64 = -1
	for _, de := range ents {
		rest, ok := strings.CutPrefix(de.Name(), taskID+"-f")
		if !ok {
			continue
		}
		if f, err := strconv.ParseInt(rest, 10, 64); err == nil && f > bestFence {
			best, bestFence = filepath.Join(e.WorktreeRoot(), de.Name()), f
		}
	}
	if best == "" {
		return "", nil
	}
	gitFile, err := os.ReadFile(filepath.Join(best, ".git"))
	if err != nil {
		return best, nil
	}
	gitdir := strings.TrimPrefix(strings.TrimSpace(string(gitFile)), "gitdir: ")
	if lock, err := os.ReadFile(filepath.Join(gitdir, "locked")); err == nil && strings.Contains(string(lock), "initializing") {
		return best, nil
	}
	files := map[string]string{}
	filepath.WalkDir(best, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(best, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return best, files
}

// lastRecordedCommit is the most recent commit events record, or "": the
// newest event that task.RecordedCommits finds a commit in.
func lastRecordedCommit(events []engine.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		for c := range task.RecordedCommits(events[i : i+1]) {
			return c
		}
	}
	return ""
}
