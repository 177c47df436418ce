package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testrepo.Open(t, dir).Git(args...)
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T) (string, *task.Engine) {
	t.Helper()
	r := testrepo.Init(t, filepath.Join(t.TempDir(), "repo"))
	r.Write(map[string]string{
		"calc.go":            "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		".bcode/config.toml": "[task]\nmax_attempts = 5\nmax_turns = 7\nmax_tokens = 1234\nwall_clock = \"10m\"\n",
	})
	r.Commit("base")
	repo := r.Dir
	led, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	e := task.New(led)
	e.TTL = 5 * time.Second
	e.Poll = 20 * time.Millisecond
	return repo, e
}

// fixAgent writes the fix in one turn.
type fixAgent struct{ file, body string }

func (a fixAgent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	return &fixSession{a: a, dir: in.Worktree}, nil
}

type fixSession struct {
	a   fixAgent
	dir string
}

func (s *fixSession) Turn(ctx context.Context) (runner.TurnResult, error) {
	err := os.WriteFile(filepath.Join(s.dir, s.a.file), []byte(s.a.body), 0o644)
	return runner.TurnResult{Summary: "fix " + s.a.file, Done: true, TokensUsed: 10}, err
}
func (s *fixSession) Close() error { return nil }

// verdictChecker returns a fixed verdict: what is under test here is what
// the engine does with a verdict, not how the gate reaches it.
type verdictChecker verify.Verdict

func (v verdictChecker) Check(ctx context.Context, in runner.CheckInput) (*verify.Report, error) {
	return &verify.Report{Verdict: verify.Verdict(v), Reasons: []verify.Reason{{Code: "test", Message: "fixed verdict " + string(v)}}}, nil
}

func runTask(t *testing.T, e *task.Engine, repo string, verdict verify.Verdict) *engine.Task {
	t.Helper()
	tk, err := e.Create(context.Background(), task.CreateInput{Repo: repo, Goal: "fix Add"})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner.Runner{Engine: e, Agent: fixAgent{"calc.go", "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"}, Checker: verdictChecker(verdict)}
	res, err := r.Run(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	return &res.Task
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	head := git(t, repo, "rev-parse", "HEAD")
	tk, err := e.Create(ctx, task.CreateInput{Repo: filepath.Join(repo, ".bcode"), Goal: "  fix Add  ",
		Selection: &engine.Selection{File: "calc.go", StartLine: 3, EndLine: 5}, Criteria: []string{"Add(2, 2) == 4", " "}})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Repo != repo || tk.Base != head || tk.Goal != "fix Add" || tk.Branch != "bcode/"+tk.ID || tk.Status != engine.TaskQueued {
		t.Errorf("task %+v", tk)
	}
	want := engine.Budgets{MaxAttempts: 5, MaxTurns: 7, MaxTokens: 1234, WallClock: 10 * time.Minute}
	if tk.Budgets != want {
		t.Errorf("budgets %+v, want the base config's %+v", tk.Budgets, want)
	}
	sel := tk.Selection
	if sel == nil || sel.Text != "func Add(a, b int) int {\n\treturn a - b\n}\n" || len(sel.SHA256) != 64 {
		t.Fatalf("selection %+v", sel)
	}
	if len(tk.Criteria) != 1 {
		t.Errorf("criteria %q", tk.Criteria)
	}
	got, err := e.Ledger.Task(ctx, tk.ID)
	if err != nil || got.Selection.SHA256 != sel.SHA256 {
		t.Fatalf("stored: %v %+v", err, got)
	}
	for _, bad := range []task.CreateInput{
		{Repo: repo, Goal: " "},
		{Repo: repo, Goal: "x", Base: "no-such-rev"},
		{Repo: repo, Goal: "x", Selection: &engine.Selection{File: "calc.go", StartLine: 4, EndLine: 99}},
		{Repo: repo, Goal: "x", Selection: &engine.Selection{File: "../etc/passwd", StartLine: 1, EndLine: 1}},
		{Repo: repo, Goal: "x", Selection: &engine.Selection{File: "missing.go", StartLine: 1, EndLine: 1}},
		{Repo: t.TempDir(), Goal: "x"},
	} {
		if _, err := e.Create(ctx, bad); err == nil {
			t.Errorf("Create(%+v) succeeded", bad)
		}
	}
}

// TestSelectionNotInBase: a selection in a file the base commit does not
// hold (new, not committed) is refused with what to do, for a new file, a
// new file in a new directory, and a file committed after the --base given;
// nothing is recorded. Once committed, the same selection is accepted.
func TestSelectionNotInBase(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	first := git(t, repo, "rev-parse", "HEAD")
	write(t, repo, "fresh.go", "package calc\n\nfunc Sub(a, b int) int { return a + b }\n")
	write(t, repo, "newdir/deep.go", "package newdir\n\nvar X = 1\n")
	for _, in := range []task.CreateInput{
		{Repo: repo, Goal: "fix Sub", Selection: &engine.Selection{File: "fresh.go", StartLine: 3, EndLine: 3}},
		{Repo: repo, Goal: "fix X", Selection: &engine.Selection{File: "newdir/deep.go", StartLine: 1, EndLine: 3}},
		{Repo: repo, Goal: "fix Sub", Selection: &engine.Selection{File: filepath.Join(repo, "fresh.go"), StartLine: 1, EndLine: 1}},
	} {
		_, err := e.Create(ctx, in)
		if !errors.Is(err, task.ErrSelectionNotInBase) {
			t.Fatalf("Create(%s): %v, want ErrSelectionNotInBase", in.Selection.File, err)
		}
		if !strings.Contains(err.Error(), "commit it first") || !strings.Contains(err.Error(), "git add") {
			t.Errorf("the error does not say what to do: %v", err)
		}
	}
	if ts, err := e.Ledger.Tasks(ctx, repo); err != nil || len(ts) != 0 {
		t.Fatalf("refused selections recorded tasks: %v %+v", err, ts)
	}
	git(t, repo, "add", "fresh.go")
	git(t, repo, "commit", "-q", "-m", "fresh")
	if _, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "fix Sub", Base: first,
		Selection: &engine.Selection{File: "fresh.go", StartLine: 3, EndLine: 3}}); !errors.Is(err, task.ErrSelectionNotInBase) {
		t.Errorf("a --base without the file: %v, want ErrSelectionNotInBase", err)
	}
	tk, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "fix Sub", Selection: &engine.Selection{File: "fresh.go", StartLine: 3, EndLine: 3}})
	if err != nil || tk.Selection == nil || tk.Selection.File != "fresh.go" {
		t.Fatalf("after the commit: %v %+v", err, tk)
	}
}

func TestAcceptFastForward(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	if tk.Status != engine.TaskVerified {
		t.Fatalf("status %s", tk.Status)
	}
	diff, err := e.Diff(ctx, tk.ID)
	if err != nil || !strings.Contains(string(diff), "+\treturn a + b") {
		t.Fatalf("diff: %v\n%s", err, diff)
	}
	res, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != "fast-forward" || res.Branch != "main" || res.Forced {
		t.Errorf("accepted %+v", res)
	}
	if got := git(t, repo, "rev-parse", "HEAD"); got != git(t, repo, "rev-parse", tk.Branch) {
		t.Errorf("main is at %s, not the task branch", got)
	}
	if !strings.Contains(git(t, repo, "show", "HEAD:calc.go"), "a + b") {
		t.Error("the fix is not on main")
	}
	st, _ := e.Status(ctx, tk.ID)
	if st.Task.Status != engine.TaskAccepted || len(st.Worktrees) != 0 {
		t.Errorf("after accept: %s, worktrees %v", st.Task.Status, st.Worktrees)
	}
	// Nothing was pushed: the repository has no remote to push to, and
	// bcode never runs push; a second accept is refused.
	if _, err := e.Accept(ctx, tk.ID, task.AcceptOptions{}); err == nil {
		t.Error("second accept succeeded")
	}
}

func TestAcceptCherryPick(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	write(t, repo, "other.txt", "the user moved on\n")
	git(t, repo, "add", "other.txt")
	git(t, repo, "commit", "-q", "-m", "user work")
	res, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != "cherry-pick" || res.From == res.To {
		t.Errorf("accepted %+v", res)
	}
	if !strings.Contains(git(t, repo, "show", "HEAD:calc.go"), "a + b") || git(t, repo, "show", "HEAD:other.txt") == "" {
		t.Error("main lacks the fix or the user's own commit")
	}
	if git(t, repo, "rev-parse", "HEAD^") != res.From {
		t.Error("the task's commit is not on top of the user's branch")
	}
}

func TestAcceptDirtyTreeRefused(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	write(t, repo, "calc.go", "package calc // edited by the user\n")
	headBefore := git(t, repo, "rev-parse", "HEAD")
	statusBefore := git(t, repo, "status", "--porcelain")
	_, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"})
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("accept on a dirty tree: %v", err)
	}
	if git(t, repo, "rev-parse", "HEAD") != headBefore || git(t, repo, "status", "--porcelain") != statusBefore {
		t.Error("the refused accept changed the checkout")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); string(b) != "package calc // edited by the user\n" {
		t.Error("the user's edit is gone")
	}
	st, _ := e.Status(ctx, tk.ID)
	if st.Task.Status != engine.TaskVerified || st.Lease != nil {
		t.Errorf("after the refusal: %s, lease %+v", st.Task.Status, st.Lease)
	}
	// An untracked file at a path the task writes is refused too.
	git(t, repo, "checkout", "--", "calc.go")
	tk2 := runTaskWith(t, e, repo, fixAgent{"new.txt", "from the task\n"})
	write(t, repo, "new.txt", "the user's own\n")
	if _, err := e.Accept(ctx, tk2.ID, task.AcceptOptions{}); err == nil || !strings.Contains(err.Error(), "untracked") {
		t.Fatalf("accept over an untracked file: %v", err)
	}
}

func runTaskWith(t *testing.T, e *task.Engine, repo string, a fixAgent) *engine.Task {
	tk, err := e.Create(context.Background(), task.CreateInput{Repo: repo, Goal: "add a file"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&runner.Runner{Engine: e, Agent: a, Checker: verdictChecker(verify.Verified)}).Run(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	return &res.Task
}

func TestAcceptUnverified(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Failed) // 5 failed attempts: blocked
	if tk.Status != engine.TaskBlocked || tk.Verdict != "failed" {
		t.Fatalf("status %s verdict %s", tk.Status, tk.Verdict)
	}
	head := git(t, repo, "rev-parse", "HEAD")
	_, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"})
	if err == nil || !strings.Contains(err.Error(), "not verified") {
		t.Fatalf("accept of an unverified task: %v", err)
	}
	if git(t, repo, "rev-parse", "HEAD") != head {
		t.Fatal("refused accept moved HEAD")
	}
	res, err := e.Accept(ctx, tk.ID, task.AcceptOptions{Force: true, By: "tester"})
	if err != nil || !res.Forced {
		t.Fatalf("forced accept: %v %+v", err, res)
	}
	evs, _ := e.Events(ctx, tk.ID, 0)
	last := evs[len(evs)-1]
	if last.Kind != task.EventAccepted || !strings.Contains(string(last.Data), `"force":true`) {
		t.Errorf("last event %s %s, want task.accepted recording the force", last.Kind, last.Data)
	}
	got, _ := e.Ledger.Task(ctx, tk.ID)
	if got.Status != engine.TaskAccepted || !strings.Contains(got.Reason, "--force") {
		t.Errorf("task %s %q", got.Status, got.Reason)
	}
}

func TestReject(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	st, _ := e.Status(ctx, tk.ID)
	if len(st.Worktrees) != 1 || st.Head == "" {
		t.Fatalf("before reject: %+v", st)
	}
	res, err := e.Reject(ctx, tk.ID, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if res.Head != st.Head || len(res.Worktrees) != 1 {
		t.Errorf("rejected %+v", res)
	}
	if _, err := os.Stat(st.Worktrees[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree %s still there", st.Worktrees[0])
	}
	if out := git(t, repo, "branch", "--list", tk.Branch); out != "" {
		t.Errorf("branch still there: %q", out)
	}
	if strings.Contains(git(t, repo, "worktree", "list"), st.Worktrees[0]) {
		t.Error("git still lists the worktree")
	}
	got, err := e.Ledger.Task(ctx, tk.ID)
	if err != nil || got.Status != engine.TaskRejected || got.Goal != "fix Add" {
		t.Fatalf("ledger record after reject: %v %+v", err, got)
	}
	if _, err := e.Accept(ctx, tk.ID, task.AcceptOptions{Force: true}); err == nil {
		t.Error("accepting a rejected task succeeded")
	}
	if _, err := e.Diff(ctx, tk.ID); err == nil {
		t.Error("diff of a rejected task succeeded")
	}
}

func TestCommandsRefuseWhileRunning(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "x"})
	if err != nil {
		t.Fatal(err)
	}
	other := ledger.Holder{Owner: "runner-elsewhere", PID: os.Getpid(), BootID: ledger.BootID()}
	lease, _, err := e.Ledger.Acquire(ctx, tk.ID, other, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reject(ctx, tk.ID, "me"); !errors.Is(err, task.ErrRunning) {
		t.Errorf("reject while running: %v", err)
	}
	if _, err := e.Accept(ctx, tk.ID, task.AcceptOptions{Force: true}); !errors.Is(err, task.ErrRunning) {
		t.Errorf("accept while running: %v", err)
	}
	// Cancel asks the runner and waits; the holder here never answers,
	// so it records the request and gives up when ctx ends.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := e.Cancel(cctx, tk.ID, "me"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancel of an unresponsive runner: %v", err)
	}
	evs, _ := e.Events(ctx, tk.ID, 0)
	if evs[len(evs)-1].Kind != task.EventCancelRequested {
		t.Errorf("events %v", evs)
	}
	e.Ledger.Release(ctx, lease)
	// Not running: cancelled at once.
	if err := e.Cancel(ctx, tk.ID, "me"); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Ledger.Task(ctx, tk.ID); got.Status != engine.TaskCancelled {
		t.Errorf("status %s", got.Status)
	}
}

// TestUsageFromTheLedger: the usage the database sums over a task's turn
// events (what Resume checks budgets with) is the usage Status computes
// from the whole log, for turn events as the runner writes them among
// events of other kinds that also carry tokens.
func TestUsageFromTheLedger(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "fix Add"})
	if err != nil {
		t.Fatal(err)
	}
	appendData := func(kind engine.EventKind, data any) {
		t.Helper()
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Ledger.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: kind, Data: raw}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tk.Budgets.MaxTurns {
		appendData(task.EventTurn, struct {
			task.TurnData
			Commit string `json:"commit,omitempty"`
		}{task.TurnData{Turn: i + 1, Summary: "edited calc.go", Tokens: 100 + i, Changed: i%2 == 0}, "abc"})
		appendData("agent.observation", map[string]any{"name": "terminal", "tokens": 5000})
	}
	u, err := e.Usage(ctx, tk.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u != st.Usage || u.Turns != 7 || u.Tokens != 7*100+21 {
		t.Fatalf("usage from the ledger %+v, from the log %+v; want 7 turns and %d tokens", u, st.Usage, 7*100+21)
	}
	if _, err := e.Resume(ctx, tk.ID, engine.Budgets{}); err == nil || !strings.Contains(err.Error(), "turn budget spent: 7 of 7 turns") {
		t.Fatalf("Resume with the turn budget spent: %v", err)
	}
}
