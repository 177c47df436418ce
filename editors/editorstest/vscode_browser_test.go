package editorstest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/verify"
)

// e2eDir is editors/vscode-e2e with code-server set up and a chromium to
// drive, or a skip (a failure with BCODE_REQUIRE_ALL=1) saying how to get
// them.
func e2eDir(t *testing.T) (dir, chromium string) {
	t.Helper()
	_, err := exec.LookPath("node")
	need(t, err == nil, "node", "install Node.js 20 (apt-get install nodejs npm)")
	dir = filepath.Join(repoRoot(t), "editors", "vscode-e2e")
	_, err = os.Stat(filepath.Join(dir, "node_modules", "code-server", "lib", "vscode", ".bcode-setup-done"))
	need(t, err == nil, "code-server (editors/vscode-e2e)", "run `npm ci && npm run setup` in editors/vscode-e2e (needs g++, make, python3 and ripgrep: apt-get install build-essential ripgrep)")
	_, err = os.Stat(filepath.Join(dir, "node_modules", "playwright-core"))
	need(t, err == nil, "playwright-core (editors/vscode-e2e)", "run `npm ci` in editors/vscode-e2e")
	chromium = os.Getenv("BCODE_E2E_CHROMIUM")
	if chromium == "" {
		chromium, _ = exec.LookPath("chromium")
	}
	need(t, chromium != "", "chromium", "apt-get install chromium (or set BCODE_E2E_CHROMIUM to a Chromium executable)")
	return dir, chromium
}

// TestVSCodeBrowser runs the extension in a real VS Code in a real browser:
// code-server from npm with the packaged .vsix installed, driven through
// Chromium by playwright-core (editors/vscode-e2e/e2e.mjs) on the fixture
// repository against the bcode-ls built from this tree. It records every
// text of the status-bar item from the page's first moment ("starting",
// never "server off", until bcode-ls answers), opens quota.go, runs
// evidence and waits for the squiggle on `n <= limit`, hovers it, sees at
// most three quick fixes on the line and runs "Show mutant diff", then
// "Show all surviving mutants on this line" (a quick pick of every action,
// from which it goes to the covering test), previews the context pack and
// cancels its progress notification, gets one message saying an untitled
// buffer has no pack, lists the Tasks view, expands the failed task to its
// reason and the tampered one (addTamperedTask) to what was tampered with
// and its test table, restarts bcode-ls and sees the status bar and the view come back,
// then takes bcode-ls away, gets the toast with the install line, puts
// bcode-ls in $GOPATH/bin and sees the toast's Restart start it; last, the
// bcode output channel's log has bcode-ls's INFO lines at info level. With
// Docker, it also runs a real task from the editor on a second, clean
// checkout (FlowFixture): select func Discount, Ctrl+. "Create task from
// selection", type the goal in the input box, see the Tasks view's row
// running with its attempt, and press Accept on the notification that says
// the task is verified (the dialog says fast-forward); main then has the
// change.
//
// BCODE_E2E_SCREENSHOTS=DIR keeps a screenshot of each step (the ones in
// docs/img/vscode-*.png come from this run).
func TestVSCodeBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a browser session: not in -short")
	}
	dir, chromium := e2eDir(t)
	ext := vscodeDir(t)
	ls := bcodeLS(t)
	f := NewFixture(t)
	tampered := addTamperedTask(t, f)

	// The .vsix as a user gets it: `npm run package`, copied away so a
	// concurrent TestVSCodePackage does not rewrite it under code-server.
	run(t, ext, nil, "npm", "run", "-s", "package")
	vsix := filepath.Join(t.TempDir(), "bcode.vsix")
	b, err := os.ReadFile(filepath.Join(ext, "bcode.vsix"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vsix, b, 0o644); err != nil {
		t.Fatal(err)
	}

	env := append(f.Env(ls), "BCODE_VSIX="+vsix, "BCODE_E2E_CHROMIUM="+chromium, "BCODE_FIXTURE_TAMPERED="+tampered)
	// The task flow needs Docker (the agent's sandbox); without it the
	// rest still runs, and BCODE_REQUIRE_ALL=1 makes it a failure.
	wantSteps := 18
	var flow *FlowFixture
	if dockerAnswers() || testenv.RequireAll() {
		flow = NewFlowFixture(t)
		installBeside(t, ls)
		env = append(env, "BCODE_FLOW_REPO="+flow.Repo, "BCODE_AGENT="+flow.Agent, "BCODE_SANDBOX_GOCACHE="+flowSeed(), "BCODE_CLI="+flowBcode)
		wantSteps += 5
	} else {
		t.Log("no Docker engine: the task-flow steps are left out")
	}
	start := time.Now()
	cmd := exec.Command("node", "e2e.mjs")
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err = cmd.Run()
	steps := 0
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "step ") {
			steps++
			t.Log(l)
		} else if strings.HasPrefix(l, "note ") {
			t.Log(l)
		}
	}
	if err != nil {
		if flow != nil {
			t.Logf("the flow's task events:\n%s", taskEvents(t, f.State, flow.Repo))
		}
		t.Fatalf("the browser session failed after %s: %v\n%s", time.Since(start).Round(time.Second), err, out.String())
	}
	if !strings.Contains(out.String(), "\nok ") || steps < wantSteps {
		t.Fatalf("the browser session did not run every step (%d of %d):\n%s", steps, wantSteps, out.String())
	}
	if flow != nil {
		flow.checkLanded(t)
	}
	t.Logf("VS Code in Chromium: %d steps in %s", steps, time.Since(start).Round(time.Second))
}

// tamperedGoal is the goal of the task addTamperedTask records.
const tamperedGoal = "Make Allowed faster"

// addTamperedTask records, in f's ledger, a failed task whose last check
// found the change tampering with the tests, with the gate's full report
// (a test table and two findings) as a runner's check records it; the
// Tasks view must name what was tampered with. It returns the task's ID.
func addTamperedTask(t *testing.T, f *Fixture) string {
	t.Helper()
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(f.State, "ledger.db"))
	if err != nil {
		t.Fatalf("opening the fixture ledger: %v", err)
	}
	defer led.Close()
	repo := f.Repo
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	at := time.Date(2025, 1, 2, 11, 0, 0, 0, time.UTC)
	tk := &engine.Task{Repo: repo, Goal: tamperedGoal, Base: f.Base, Status: engine.TaskFailed, Verdict: string(verify.Tampered),
		Reason: "the change weakens the tests: TestAllowed is deleted", CreatedAt: at}
	if err := led.CreateTask(ctx, tk); err != nil {
		t.Fatalf("seeding the tampered task: %v", err)
	}
	head := strings.Repeat("7", 40)
	rep := verify.Report{
		Verdict: verify.Tampered,
		Reasons: []verify.Reason{{Code: verify.ReasonTamper, Message: "the change weakens the tests or touches what it must not"}},
		Base:    f.Base, Head: head, Files: 2,
		Tests: []verify.TestReport{{Name: "TestAllowedFast", Package: "example.com/quota/quota", File: "quota/fast_test.go", Language: "go",
			BaseOutcome: verify.Fail, HeadOutcome: verify.Pass, Credited: true, Reason: verify.ReasonCredited, ReasonText: "fails on the base, passes on the head"}},
		Tamper: []verify.Finding{
			{Code: verify.FindingTestDeleted, Path: "quota/quota_test.go", Line: 5, Message: "TestAllowed is deleted"},
			{Code: verify.FindingTestSkipped, Path: "quota/fast_test.go", Line: 9, Message: "TestAllowedBurst calls t.Skip"},
		},
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		kind engine.EventKind
		data string
	}{
		{engine.EventAttemptStarted, `{"number":1}`},
		{engine.EventCheckFinished, `{"head":"` + head + `","verdict":"tampered"}`},
		{engine.EventAttemptFinished, `{"number":1,"verdict":"tampered"}`},
		{engine.EventFailed, `{"reason":"the change weakens the tests: TestAllowed is deleted"}`},
	} {
		at = at.Add(time.Minute)
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: e.kind, Data: json.RawMessage(e.data), At: at}); err != nil {
			t.Fatalf("seeding event %s: %v", e.kind, err)
		}
	}
	if _, err := led.RecordVerification(ctx, &engine.VerificationRun{TaskID: tk.ID, Attempt: 1, Repo: repo, Base: f.Base, Head: head,
		Verdict: string(verify.Tampered), Report: raw, DurationMS: 4200, At: at}); err != nil {
		t.Fatalf("recording the tampered check: %v", err)
	}
	return tk.ID
}
