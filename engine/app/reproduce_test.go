package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

// callingAgent is the test's agent: it asks the scripted model once per
// attempt, as a real agent would before editing, then writes its files
// and finishes.
type callingAgent struct {
	model string
	files map[string]string
}

func (a callingAgent) StartAttempt(ctx context.Context, in agent.AttemptInput) (agent.Session, error) {
	body := `{"model":"scripted","messages":[{"role":"user","content":"fix it"}]}`
	resp, err := http.Post(a.model+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return callingSession{a: a, dir: in.Worktree}, nil
}

type callingSession struct {
	a   callingAgent
	dir string
}

func (s callingSession) Turn(ctx context.Context) (agent.TurnResult, error) {
	for rel, body := range s.a.files {
		p := filepath.Join(s.dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return agent.TurnResult{}, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return agent.TurnResult{}, err
		}
	}
	return agent.TurnResult{Summary: "edited", Done: true, TokensUsed: 10}, nil
}

func (callingSession) Close() error { return nil }

const (
	goAbs     = "package calc\n\nfunc Abs(x int) int { return x }\n\nfunc Double(x int) int { return 2 * x }\n"
	goAbsFix  = "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n\nfunc Double(x int) int { return 2 * x }\n"
	goAbsTest = "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(Double(2))\n\t}\n}\n"
)

// reproduceTask makes a repository of base (with a model config naming a
// scripted server, one attempt), creates a task with --reproduce cmd and
// runs it with an agent that writes edits. It returns the task's status,
// its events and the model server.
func reproduceTask(t *testing.T, base map[string]string, cmd string, edits map[string]string) (*task.Status, []engine.Event, *modeltest.Server, *app.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	model := modeltest.New(modeltest.Options{}, modeltest.Step{Content: "ok"}, modeltest.Step{Content: "ok"})
	t.Cleanup(model.Close)
	files := map[string]string{".bcode/config.toml": fmt.Sprintf("[model]\nendpoint = %q\n\n[task]\nmax_attempts = 1\n\n[evidence]\nmax_survivors = -1\n", model.URL)}
	for k, v := range base {
		files[k] = v
	}
	if cfg, ok := base[".bcode/config.toml"]; ok {
		files[".bcode/config.toml"] = fmt.Sprintf("[model]\nendpoint = %q\n\n[task]\nmax_attempts = 1\n\n%s", model.URL, cfg)
	}
	repo := testrepo.FromFiles(t, files).Dir
	eng := app.Open(app.Options{LedgerPath: filepath.Join(t.TempDir(), "ledger.db"),
		Agent: func(context.Context, config.Config, engine.Task) (agent.Agent, error) {
			return callingAgent{model: model.URL, files: edits}, nil
		}})
	t.Cleanup(func() { eng.Close() })
	tk, err := eng.CreateTask(ctx, app.TaskRequest{Repo: repo, Reproduce: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tk.Goal, "Make the failing test pass") {
		t.Errorf("the goal made from the command: %q", tk.Goal)
	}
	if _, err := eng.RunTask(ctx, tk.ID, app.RunOptions{}); err != nil {
		t.Fatalf("run: %v", err)
	}
	st, err := eng.TaskStatus(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := eng.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st, evs, model, eng
}

func eventOf(evs []engine.Event, kind engine.EventKind) map[string]any {
	for _, ev := range evs {
		if ev.Kind == kind {
			var d map[string]any
			json.Unmarshal(ev.Data, &d)
			return d
		}
	}
	return nil
}

// notReproducible asserts the task ended not_reproducible before any
// model call: no attempt, no tokens, no chat request.
func notReproducible(t *testing.T, st *task.Status, evs []engine.Event, model *modeltest.Server, reason string) map[string]any {
	t.Helper()
	if st.Task.Status != engine.TaskNotReproducible || !strings.Contains(st.Task.Reason, reason) {
		t.Fatalf("status %s (%s), want not_reproducible saying %q", st.Task.Status, st.Task.Reason, reason)
	}
	if n := len(model.Requests()); n != 0 || len(st.Attempts) != 0 || st.Usage.Tokens != 0 {
		t.Fatalf("%d model requests, %d attempts, %d tokens: want none", n, len(st.Attempts), st.Usage.Tokens)
	}
	d := eventOf(evs, engine.EventNotReproducible)
	if d == nil {
		t.Fatalf("no %s event in %v", engine.EventNotReproducible, evs)
	}
	if st.Oracle == nil || st.Oracle.Pinned() {
		t.Errorf("oracle %+v: want the request, not pinned", st.Oracle)
	}
	return d
}

// TestReproduceGoPassingTestIsNotReproducible: a Go test that passes on
// the base ends the task not_reproducible, saying what ran and passed,
// without a model call.
func TestReproduceGoPassingTestIsNotReproducible(t *testing.T) {
	base := map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "calc/calc.go": goAbs, "calc/calc_test.go": goAbsTest}
	st, evs, model, _ := reproduceTask(t, base, "go test ./calc -run '^TestDouble$'", map[string]string{"calc/calc.go": goAbsFix})
	d := notReproducible(t, st, evs, model, "passed on the base")
	if fmt.Sprint(d["ran"]) != "[go:./calc:TestDouble]" || fmt.Sprint(d["passing"]) != "[go:./calc:TestDouble]" || d["code"] != verify.ReproducePasses {
		t.Errorf("the event: %+v", d)
	}
}

// TestReproducePythonFlakyIsRefused: a pytest test that fails in some
// runs and passes in others is no oracle.
func TestReproducePythonFlakyIsRefused(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	flaky := "import pathlib\n\n\ndef test_sometimes():\n    p = pathlib.Path(__file__).with_name('runs.txt')\n    n = int(p.read_text()) if p.exists() else 0\n    p.write_text(str(n + 1))\n    assert n % 2 == 1\n"
	base := map[string]string{"calc.py": "def add(a, b):\n    return a + b\n", "tests/test_flaky.py": flaky, ".gitignore": "runs.txt\n"}
	st, evs, model, _ := reproduceTask(t, base, "python3 -m pytest tests/test_flaky.py::test_sometimes", nil)
	d := notReproducible(t, st, evs, model, "flaky")
	if d["code"] != verify.ReproduceFlaky || !strings.Contains(fmt.Sprint(d["flaky"]), "tests/test_flaky.py:test_sometimes") {
		t.Errorf("the event: %+v", d)
	}
}

// TestReproduceGoPinsTheOracleAndVerifies: the failing test is pinned
// with its file's hash, the agent's fix makes it flip, and the change is
// verified at V3 (nothing else fails), shown in status.
func TestReproduceGoPinsTheOracleAndVerifies(t *testing.T) {
	base := map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "calc/calc.go": goAbs, "calc/calc_test.go": goAbsTest}
	st, evs, model, _ := reproduceTask(t, base, "go test ./calc -run TestAbs", map[string]string{"calc/calc.go": goAbsFix})
	if st.Task.Status != engine.TaskVerified {
		t.Fatalf("status %s (%s), want verified; attempts %+v", st.Task.Status, st.Task.Reason, st.Attempts)
	}
	o := st.Oracle
	if !o.Pinned() || len(o.Tests) != 1 || o.Tests[0].ID() != "go:./calc:TestAbs" || o.Tests[0].File != "calc/calc_test.go" ||
		len(o.Files) != 1 || o.Files[0].Path != "calc/calc_test.go" || len(o.Files[0].SHA256) != 64 {
		t.Fatalf("oracle %+v", o)
	}
	if d := eventOf(evs, engine.EventReproduced); d == nil || fmt.Sprint(d["ran"]) != "[go:./calc:TestAbs]" {
		t.Errorf("the reproduced event: %+v", d)
	}
	if st.Level.Reached != "V3" || st.Level.Required != "V2" {
		t.Errorf("level %+v, want V3 of V2", st.Level)
	}
	if len(model.Requests()) != 1 {
		t.Errorf("%d model requests, want the agent's one", len(model.Requests()))
	}
}

// TestReproduceOracleEditIsTampering: the agent makes the oracle test
// pass by editing it: the check is tampered (the gate's protected-path
// rule, with the oracle's file), whatever the test does.
func TestReproduceOracleEditIsTampering(t *testing.T) {
	base := map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "calc/calc.go": goAbs, "calc/calc_test.go": goAbsTest}
	weakened := strings.Replace(goAbsTest, "Abs(-3) != 3", "Abs(3) != 3", 1)
	st, evs, _, eng := reproduceTask(t, base, "go test ./calc -run TestAbs", map[string]string{"calc/calc_test.go": weakened})
	d := eventOf(evs, engine.EventCheckFinished)
	if d == nil || d["verdict"] != string(verify.Tampered) {
		t.Fatalf("check.finished %+v, want tampered", d)
	}
	if st.Task.Status == engine.TaskVerified {
		t.Fatal("a task whose agent edited its oracle test is verified")
	}
	runs, err := eng.TaskVerifications(context.Background(), st.Task.ID, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("verification runs: %v %v", runs, err)
	}
	var rep verify.Report
	if err := json.Unmarshal(runs[0].Report, &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Tamper {
		found = found || (f.Code == verify.FindingProtectedPath && f.Path == "calc/calc_test.go" && strings.Contains(f.Message, "pinned oracle test file"))
	}
	if len(rep.Reasons) == 0 || !strings.Contains(rep.Reasons[0].Message, "calc/calc_test.go: the task's pinned oracle test file") {
		t.Errorf("reasons %+v: want the oracle file named as such", rep.Reasons)
	}
	if !found || rep.Level != verify.LevelNone || len(rep.Oracle) != 1 {
		t.Errorf("tamper %+v, level %s, oracle %v: want protected_path on calc/calc_test.go, none, the oracle", rep.Tamper, rep.Level, rep.Oracle)
	}
}

// TestReproducePythonLevels: with a pytest oracle, a fix that leaves
// another test failing on both sides reaches V2; the base asking V3 holds
// it green, saying what is missing; a change that does not flip the
// oracle reaches no level.
func TestReproducePythonLevels(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	base := map[string]string{
		"calc.py":             "def absolute(x):\n    return x\n",
		"tests/test_calc.py":  "from calc import absolute\n\n\ndef test_negative():\n    assert absolute(-3) == 3\n\n\ndef test_positive():\n    assert absolute(3) == 3\n",
		"tests/test_other.py": "def test_broken():\n    assert False, 'broken on the base'\n",
		".bcode/config.toml":  "[verify]\nlevel = \"V3\"\n",
	}
	fix := map[string]string{"calc.py": "def absolute(x):\n    return -x if x < 0 else x\n"}
	st, evs, _, _ := reproduceTask(t, base, "python3 -m pytest tests/test_calc.py::test_negative", fix)
	if !st.Oracle.Pinned() || st.Oracle.Tests[0].ID() != "python:tests/test_calc.py:test_negative" {
		t.Fatalf("oracle %+v", st.Oracle)
	}
	d := eventOf(evs, engine.EventCheckFinished)
	if d == nil || d["verdict"] != string(verify.Green) || d["level"] != "V2" || !strings.Contains(fmt.Sprint(d["level_missing"]), "test_broken") {
		t.Fatalf("check.finished %+v: want green at V2, missing test_broken", d)
	}
	if !strings.Contains(fmt.Sprint(d["reasons"]), "reached V2, the base's verify.level asks for V3") {
		t.Errorf("reasons %v", d["reasons"])
	}

	noFix := map[string]string{"calc.py": "def absolute(x):\n    return x  # looked at it\n"}
	_, evs, _, _ = reproduceTask(t, base, "python3 -m pytest tests/test_calc.py::test_negative", noFix)
	if d := eventOf(evs, engine.EventCheckFinished); d == nil || d["level"] != string(verify.LevelNone) || !strings.Contains(fmt.Sprint(d["level_missing"]), "python:tests/test_calc.py:test_negative") {
		t.Fatalf("check.finished %+v: want no level, the oracle named", d)
	}
}
