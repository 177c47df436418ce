package editorstest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// need skips (or, with BCODE_REQUIRE_ALL=1, fails) when a tool is missing.
func need(t *testing.T, ok bool, what, how string) {
	t.Helper()
	testenv.Need(t, ok, what+" is missing: "+how)
}

// repoRoot is the module root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find the source of this test")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	builtLS   string
	buildErr  error
	buildDir  string
)

// bcodeLS builds cmd/bcode-ls from this tree once per test binary.
func bcodeLS(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bcode-ls-editors-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		out := filepath.Join(dir, "bcode-ls")
		cmd := exec.Command("go", "build", "-o", out, "./cmd/bcode-ls")
		cmd.Dir = repoRoot(t)
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildFailure{err: err, out: string(b)}
			return
		}
		builtLS = out
	})
	if buildErr != nil {
		t.Fatalf("building bcode-ls: %v", buildErr)
	}
	return builtLS
}

type buildFailure struct {
	err error
	out string
}

func (b *buildFailure) Error() string { return b.err.Error() + "\n" + b.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if vsixDir != "" {
		os.RemoveAll(vsixDir)
	}
	for _, d := range flowDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// Fixture is a git checkout with an uncommitted change whose boundary is
// not pinned by any test (so the `<=` → `<` mutant survives), and a state
// dir whose ledger holds tasks of that checkout, one of them verified with
// a real, recorded commit on its branch to diff and accept, one failed
// with a commit of its own to reject.
type Fixture struct {
	Repo  string // the checkout
	State string // BCODE_STATE for bcode-ls
	Base  string // the commit the change and the tasks start from

	Verified, Failed, Running string // task IDs
	// VerifiedHead and FailedHead are the commits on the verified and the
	// failed task's branches.
	VerifiedHead, FailedHead string
}

const (
	goMod = "module example.com/quota\n\ngo 1.22\n"

	baseSource = `package quota

// Allowed reports whether n requests fit in a quota of limit.
func Allowed(n, limit int) bool {
	return false
}
`
	// The change under evidence: the comparison's boundary is never tested.
	changedSource = `package quota

// Allowed reports whether n requests fit in a quota of limit.
func Allowed(n, limit int) bool {
	if n <= limit {
		return true
	}
	return false
}
`
	changedTest = `package quota

import "testing"

func TestAllowed(t *testing.T) {
	if !Allowed(1, 10) {
		t.Fatal("1 of 10 must be allowed")
	}
	if Allowed(50, 10) {
		t.Fatal("50 of 10 must be refused")
	}
}
`
	// What the verified task's branch adds: the boundary pinned.
	boundaryTest = `package quota

import "testing"

func TestAllowedAtTheLimit(t *testing.T) {
	if !Allowed(10, 10) {
		t.Fatal("10 of 10 must be allowed")
	}
	if Allowed(11, 10) {
		t.Fatal("11 of 10 must be refused")
	}
}
`
)

// NewFixture builds the fixture in t.TempDir().
func NewFixture(t *testing.T) *Fixture {
	t.Helper()
	return newFixtureAt(t, t.TempDir())
}

// newFixtureAt builds the fixture in dir (quota/ and state/).
func newFixtureAt(t *testing.T, dir string) *Fixture {
	t.Helper()
	testenv.Git(t)
	f := &Fixture{Repo: filepath.Join(dir, "quota"), State: filepath.Join(dir, "state")}
	if err := os.MkdirAll(f.Repo, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) {
		p := filepath.Join(f.Repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := testrepo.Command(f.Repo, append([]string{"-c", "user.name=bcode test", "-c", "user.email=test@bcode.invalid"}, args...)...)
		cmd.Env = append(cmd.Env, "GIT_AUTHOR_DATE=2025-01-02T10:00:00Z", "GIT_COMMITTER_DATE=2025-01-02T10:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	write("go.mod", goMod)
	write("quota/quota.go", baseSource)
	git("add", "-A")
	git("commit", "-q", "-m", "quota: a stub")
	f.Base = git("rev-parse", "HEAD")

	ctx := context.Background()
	if err := os.MkdirAll(f.State, 0o700); err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, filepath.Join(f.State, "ledger.db"))
	if err != nil {
		t.Fatalf("opening the fixture ledger: %v", err)
	}
	defer led.Close()
	repo := f.Repo
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real // bcode-ls lists the tasks of the resolved workspace path
	}
	at := time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC)
	task := func(goal string, status engine.TaskStatus, verdict, reason string) string {
		tk := &engine.Task{Repo: repo, Goal: goal, Base: f.Base, Status: status, Verdict: verdict, Reason: reason, CreatedAt: at}
		if err := led.CreateTask(ctx, tk); err != nil {
			t.Fatalf("seeding task %q: %v", goal, err)
		}
		return tk.ID
	}
	event := func(id string, kind engine.EventKind, data map[string]any) {
		t.Helper()
		at = at.Add(time.Minute)
		var raw json.RawMessage
		if data != nil {
			raw, _ = json.Marshal(data)
		}
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: id, Kind: kind, Data: raw, At: at}); err != nil {
			t.Fatalf("seeding event %s: %v", kind, err)
		}
	}
	// branch commits on the task's branch from the base, and comes back.
	branch := func(id, msg string, files map[string]string) string {
		t.Helper()
		git("checkout", "-q", "-b", "bcode/"+id, f.Base)
		for rel, text := range files {
			write(rel, text)
		}
		git("add", "-A")
		git("commit", "-q", "-m", msg)
		head := git("rev-parse", "HEAD")
		git("checkout", "-q", "main")
		return head
	}
	f.Verified = task("Add a test for the boundary of Allowed at the limit", engine.TaskVerified, "verified", "")
	f.Failed = task("Make Allowed count bursts", engine.TaskFailed, "unverified", "the new test passes on the base commit too, so it proves nothing")
	f.Running = task("Document quota semantics", engine.TaskRunning, "", "")

	// The verified task, as a runner leaves one (engine/task): its branch
	// holds the base plus the change plus the test that pins the boundary,
	// committed by a recorded turn, and the gate's verified check names
	// exactly that head, which is what Accept checks before it lands it.
	f.VerifiedHead = branch(f.Verified, "quota: pin the boundary of Allowed", map[string]string{
		"quota/quota.go": changedSource, "quota/quota_test.go": changedTest, "quota/boundary_test.go": boundaryTest,
	})
	event(f.Verified, "attempt.started", map[string]any{"number": 1})
	event(f.Verified, "turn.finished", map[string]any{"turn": 1, "commit": f.VerifiedHead, "parent": f.Base, "changed": []string{"quota/boundary_test.go", "quota/quota.go", "quota/quota_test.go"}})
	event(f.Verified, "check.finished", map[string]any{"head": f.VerifiedHead, "verdict": "verified"})
	event(f.Verified, "attempt.finished", map[string]any{"number": 1, "verdict": "verified"})
	event(f.Verified, "task.verified", map[string]any{"head": f.VerifiedHead})

	// The failed task: a real commit too, which Reject must throw away
	// without touching main.
	f.FailedHead = branch(f.Failed, "quota: count bursts", map[string]string{"quota/quota.go": strings.Replace(baseSource, "return false", "return n < 2*limit", 1)})
	event(f.Failed, "attempt.started", map[string]any{"number": 1})
	event(f.Failed, "turn.finished", map[string]any{"turn": 1, "commit": f.FailedHead, "parent": f.Base, "changed": []string{"quota/quota.go"}})
	event(f.Failed, "check.finished", map[string]any{"head": f.FailedHead, "verdict": "unverified"})
	event(f.Failed, "attempt.finished", map[string]any{"number": 1, "verdict": "unverified"})

	event(f.Running, "attempt.started", map[string]any{"number": 1})

	// The user's own change, not committed: evidence runs on it.
	write("quota/quota.go", changedSource)
	write("quota/quota_test.go", changedTest)
	return f
}

// Env is the environment bcode-ls and the client tests run with.
func (f *Fixture) Env(ls string) []string {
	return append(os.Environ(),
		"BCODE_STATE="+f.State,
		"BCODE_LS="+ls,
		"BCODE_FIXTURE_REPO="+f.Repo,
		"BCODE_FIXTURE_BASE="+f.Base,
		"BCODE_FIXTURE_VERIFIED="+f.Verified,
		"BCODE_FIXTURE_FAILED="+f.Failed,
		"BCODE_FIXTURE_RUNNING="+f.Running,
		"BCODE_FIXTURE_VERIFIED_HEAD="+f.VerifiedHead,
		"BCODE_FIXTURE_FAILED_HEAD="+f.FailedHead,
	)
}

// TestFixtureForDocs writes a fixture to $BCODE_EDITORS_FIXTURE_OUT and
// prints its environment, for taking the screenshots in docs/editors.md by
// hand. It does nothing otherwise.
func TestFixtureForDocs(t *testing.T) {
	out := os.Getenv("BCODE_EDITORS_FIXTURE_OUT")
	if out == "" {
		t.Skip("set BCODE_EDITORS_FIXTURE_OUT=DIR to write a fixture for screenshots")
	}
	f := newFixtureAt(t, out)
	ls := bcodeLS(t)
	if err := exec.Command("cp", ls, filepath.Join(out, "bcode-ls")).Run(); err != nil {
		t.Fatal(err)
	}
	t.Logf("BCODE_STATE=%s/state BCODE_FIXTURE_REPO=%s/quota verified=%s failed=%s running=%s", out, out, f.Verified, f.Failed, f.Running)
}

// TestHelperAppendEvent is not a test: the client tests re-run this test
// binary with BCODE_HELPER_APPEND_TASK set to append an event to a task in
// the fixture ledger, the way a runner in the background would, so they can
// watch bcode-ls turn it into bcode/taskChanged.
func TestHelperAppendEvent(t *testing.T) {
	id := os.Getenv("BCODE_HELPER_APPEND_TASK")
	if id == "" {
		t.Skip("helper for the client tests; runs only with BCODE_HELPER_APPEND_TASK set")
	}
	kind := os.Getenv("BCODE_HELPER_APPEND_KIND")
	state := os.Getenv("BCODE_STATE")
	if kind == "" || state == "" {
		t.Fatal("BCODE_HELPER_APPEND_KIND and BCODE_STATE must be set")
	}
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if _, err := led.Append(ctx, nil, &engine.Event{TaskID: id, Kind: engine.EventKind(kind)}); err != nil {
		t.Fatal(err)
	}
}

// appendEventCommand is the command line (JSON array) that runs
// TestHelperAppendEvent; the clients add the task and kind through env.
func appendEventCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]string{exe, "-test.run=^TestHelperAppendEvent$", "-test.count=1"})
	return string(b)
}
