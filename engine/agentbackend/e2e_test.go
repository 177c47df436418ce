package agentbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// The harness: the real bcode CLI and bcode-agent, built once per test
// binary; the sandbox image built through `bcode sandbox build`; fixture
// repositories from testdata/*.txtar, committed for real; the scripted
// model server (modeltest) on the host, named in the base commit's
// .bcode/config.toml.

// testImage is the image the tests build with `bcode sandbox build`.
const testImage = "bcode-sandbox:agentbackend-test"

var (
	binDir    string // holds bcode and bcode-agent
	setupOnce sync.Once
	setupErr  error
	dockerErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bcode-agentbackend-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// pgtest.Main stops the PostgreSQL cluster the Postgres kill loop started.
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireSandbox builds the binaries and the image once, or skips (fails
// under BCODE_REQUIRE_ALL=1) when no Docker engine answers.
func requireSandbox(t *testing.T) {
	t.Helper()
	setupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		e, err := docker.Connect(ctx)
		cancel()
		if err != nil {
			dockerErr = err
			return
		}
		e.Close()
		// bcode-agent runs in the container: static. bcode runs on the
		// host and is built as a user's go build would (sharing the cache).
		for _, b := range []struct{ out, pkg, cgo string }{
			{"bcode", "github.com/bcode-dev/bcode/cmd/bcode", ""},
			{"bcode-agent", "github.com/bcode-dev/bcode/cmd/bcode-agent", "CGO_ENABLED=0"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
			cmd.Env = append(os.Environ(), b.cgo)
			if out, err := cmd.CombinedOutput(); err != nil {
				setupErr = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
		state, err := os.MkdirTemp("", "bcode-agentbackend-image-")
		if err != nil {
			setupErr = err
			return
		}
		defer os.RemoveAll(state)
		cmd := exec.Command(filepath.Join(binDir, "bcode"), "sandbox", "build", "--image", testImage, "--state", state)
		if out, err := cmd.CombinedOutput(); err != nil {
			setupErr = fmt.Errorf("bcode sandbox build: %v\n%s", err, out)
		}
	})
	if dockerErr != nil {
		testenv.Missing(t, "needs a Docker engine: start dockerd (apt-get install docker.io; dockerd &): "+dockerErr.Error())
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// seedCache is the sandbox's seed Go build cache for every test of the
// package: the fixtures are ours and hold no secrets, and a cold standard
// library takes ~90 s to compile here. It persists between runs, as the
// go command's own cache does.
func seedCache(t *testing.T) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "bcode", "sandbox-gocache", "agentbackend-tests")
}

// fixture is a repository made from testdata/NAME.txtar.
type fixture struct {
	t     *testing.T
	bin   string // the directory bcode runs from (binDir unless set)
	repo  string
	state string
	home  string // the CLI's HOME
	env   []string
	model *modeltest.Server
}

// newFixture writes the txtar's files (with {{ENDPOINT}}, {{IMAGE}} and the
// extra replacements filled in), commits them as the base on main, and
// starts the scripted model server.
func newFixture(t *testing.T, name string, model *modeltest.Server, replace map[string]string) *fixture {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	f := &fixture{t: t, repo: filepath.Join(root, "repo"), state: filepath.Join(root, "state"), home: filepath.Join(root, "home"), model: model}
	t.Cleanup(model.Close)
	if h, ok := replace["{{HOME}}"]; ok {
		f.home = h
	}
	for _, d := range []string{f.repo, f.state, f.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	repl := map[string]string{"{{ENDPOINT}}": model.URL, "{{IMAGE}}": testImage, "{{HOME}}": f.home}
	for k, v := range replace {
		repl[k] = v
	}
	for _, file := range ar.Files {
		body := string(file.Data)
		for k, v := range repl {
			body = strings.ReplaceAll(body, k, v)
		}
		p := filepath.Join(f.repo, file.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testrepo.Init(t, f.repo).Commit("base")
	f.env = []string{"BCODE_STATE=" + f.state, "HOME=" + f.home, SeedEnv + "=" + seedCache(t)}
	return f
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return testrepo.Open(f.t, f.repo).Git(args...)
}

// bcodeCmd is the CLI as a user runs it in the repository, with the
// fixture's state dir and HOME. The Go environment (GOMODCACHE, GOCACHE,
// GOPATH) is pinned to the test process's, since HOME moves.
func (f *fixture) bcodeCmd(extraEnv []string, args ...string) *exec.Cmd {
	bin := f.bin
	if bin == "" {
		bin = binDir
	}
	cmd := exec.Command(filepath.Join(bin, "bcode"), args...)
	cmd.Dir = f.repo
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BCODE_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	for _, k := range []string{"GOMODCACHE", "GOCACHE", "GOPATH"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil {
			env = append(env, k+"="+strings.TrimSpace(string(v)))
		}
	}
	cmd.Env = append(append(env, f.env...), extraEnv...)
	return cmd
}

// bcode runs the CLI to the end and returns stdout, stderr and the exit code.
func (f *fixture) bcode(extraEnv []string, args ...string) (string, string, int) {
	f.t.Helper()
	cmd := f.bcodeCmd(extraEnv, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			f.t.Fatalf("bcode %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// create makes a task and returns its ID.
func (f *fixture) create(goal string) string {
	f.t.Helper()
	out, errOut, code := f.bcode(nil, "task", "create", goal)
	if code != 0 {
		f.t.Fatalf("bcode task create: exit %d\n%s%s", code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// status is `bcode task status ID --json`.
func (f *fixture) status(id string) map[string]any {
	f.t.Helper()
	out, errOut, code := f.bcode(nil, "task", "status", id, "--json")
	if code != 0 {
		f.t.Fatalf("bcode task status: exit %d\n%s%s", code, out, errOut)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		f.t.Fatalf("status JSON: %v\n%s", err, out)
	}
	return st
}

// runTask is `bcode task run ID`, which must exit 0, then the task as
// `bcode task status ID --json` shows it, and the run's output.
func (f *fixture) runTask(env []string, id string) (task map[string]any, stdout, stderr string) {
	f.t.Helper()
	start := time.Now()
	stdout, stderr, code := f.bcode(env, "task", "run", id)
	f.t.Logf("bcode task run: %s, exit %d", time.Since(start).Round(time.Millisecond), code)
	if code != 0 {
		f.t.Fatalf("bcode task run: exit %d\nstdout:\n%s\nstderr:\n%s\n%s", code, stdout, stderr, f.agentLogs())
	}
	st := f.status(id)
	task, _ = st["task"].(map[string]any)
	if task == nil {
		task = st
	}
	return task, stdout, stderr
}

// ledger opens the fixture's ledger (after the CLI has exited).
func (f *fixture) ledger() *ledger.Ledger {
	f.t.Helper()
	led, err := ledger.Open(context.Background(), filepath.Join(f.state, "ledger.db"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { led.Close() })
	return led
}

// observations are the agent's tool results in the ledger, in order.
func observations(t *testing.T, led *ledger.Ledger, id string) []string {
	t.Helper()
	evs, err := led.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind == "agent.observation" {
			var d struct {
				Name   string `json:"name"`
				Output string `json:"output"`
			}
			json.Unmarshal(ev.Data, &d)
			out = append(out, string(ev.Data))
		}
	}
	return out
}

// agentLogOf is what bcode-agent wrote on stderr (for failure messages).
func (f *fixture) agentLogs() string {
	var b strings.Builder
	ms, _ := filepath.Glob(filepath.Join(f.state, "logs", "*.agent.log"))
	for _, m := range ms {
		data, _ := os.ReadFile(m)
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(m), data)
	}
	return b.String()
}

// containersOf lists the task's containers (running or not) by label;
// filters are more `docker ps --filter` terms ("label=K=V", "status=running").
func containersOf(t *testing.T, id string, filters ...string) []string {
	t.Helper()
	args := []string{"ps", "-a", "--filter", "label=" + LabelTask + "=" + id, "--format", "{{.ID}} {{.State}} fence={{.Label \"" + LabelFence + "\"}}"}
	for _, f := range filters {
		args = append(args, "--filter", f)
	}
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func call(name, args string) modeltest.Step {
	return modeltest.Step{ToolCalls: []modeltest.Call{{Name: name, Arguments: args}}}
}

func jsonArgs(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func editor(args map[string]any) modeltest.Step { return call("file_editor", jsonArgs(args)) }
func terminal(cmd string) modeltest.Step {
	return call("terminal", jsonArgs(map[string]any{"command": cmd}))
}
func finish(summary string) modeltest.Step {
	return call("finish", jsonArgs(map[string]any{"summary": summary}))
}

// TestEndToEnd: the scripted model drives `bcode task run` on a real Go
// module with a bug. The agent, in the Docker sandbox, views the file,
// fixes it with str_replace, adds a test, runs the tests in the container;
// the runner commits checkpoints on the task branch, the gate verifies, and
// `bcode task accept` lands the change on the user's branch.
func TestEndToEnd(t *testing.T) {
	requireSandbox(t)
	model := modeltest.New(modeltest.Options{Tools: true},
		editor(map[string]any{"command": "view", "path": "calc.go"}),
		editor(map[string]any{"command": "str_replace", "path": "calc.go", "old_str": "\treturn x\n", "new_str": "\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n"}),
		editor(map[string]any{"command": "str_replace", "path": "calc_test.go", "old_str": "func TestAbsPositive", "new_str": "func TestAbsNegative(t *testing.T) {\n\tif got := Abs(-4); got != 4 {\n\t\tt.Fatalf(\"Abs(-4) = %d, want 4\", got)\n\t}\n}\n\nfunc TestAbsPositive"}),
		terminal("cat /etc/bcode-sandbox; echo uid=$(id -u); go test -count=1 ./... 2>&1"),
		finish("Abs now negates negative input; TestAbsNegative covers it."),
	)
	f := newFixture(t, "e2e-abs", model, nil)
	id := f.create("Abs returns negative numbers unchanged; make it return the absolute value.")

	task, out, errOut := f.runTask(nil, id)
	if task["status"] != string(engine.TaskVerified) || task["verdict"] != "verified" {
		t.Fatalf("task status %v verdict %v, want verified/verified\nstdout:\n%s\nstderr:\n%s\n%s", task["status"], task["verdict"], out, errOut, f.agentLogs())
	}
	if model.Remaining() != 0 || len(model.Failures()) > 0 {
		t.Errorf("script: %d steps left, failures %v", model.Remaining(), model.Failures())
	}

	// The tests ran in the container: the image's marker file, the sandbox
	// user, and go test's verdict are in the terminal's observation.
	led := f.ledger()
	obs := strings.Join(observations(t, led, id), "\n")
	for _, want := range []string{"rootfs 1", "uid=65532", "ok  \\texample.com/calc"} {
		if os.Geteuid() != 0 && want == "uid=65532" {
			want = fmt.Sprintf("uid=%d", os.Geteuid())
		}
		if !strings.Contains(obs, want) {
			t.Errorf("the agent's observations lack %q:\n%s", want, obs)
		}
	}

	// The task branch has a checkpoint commit for each editing turn.
	branch, _ := task["branch"].(string)
	base, _ := task["base"].(string)
	log := f.git("log", "--format=%s", base+".."+branch)
	for _, turn := range []string{"turn 2", "turn 3"} {
		if !strings.Contains(log, fmt.Sprintf("bcode: task %s attempt 1 %s", id, turn)) {
			t.Errorf("no checkpoint commit for %s on %s:\n%s", turn, branch, log)
		}
	}

	// The gate's record: verified, with TestAbsNegative credited.
	runs, err := led.Verifications(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range runs {
		if r.TaskID == id {
			found = true
			if r.Verdict != "verified" {
				t.Errorf("verification run verdict %q, want verified", r.Verdict)
			}
			// The agent's code and tests were verified in the sandbox,
			// not on the host.
			var rep struct {
				Runner string `json:"runner"`
			}
			if err := json.Unmarshal(r.Report, &rep); err != nil || rep.Runner != "docker" {
				t.Errorf("the gate ran the agent's tests in %q (%v), want the docker sandbox", rep.Runner, err)
			}
		}
	}
	if !found {
		t.Errorf("no verification run recorded for task %s (%d runs)", id, len(runs))
	}
	if cs := containersOf(t, id); len(cs) > 0 {
		t.Errorf("containers of the task left after the run: %v", cs)
	}

	// Accept lands it on the user's branch.
	out, errOut, code := f.bcode(nil, "task", "accept", id)
	if code != 0 {
		t.Fatalf("bcode task accept: exit %d\n%s%s", code, out, errOut)
	}
	body, err := os.ReadFile(filepath.Join(f.repo, "calc.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "return -x") {
		t.Errorf("calc.go on the user's branch after accept:\n%s", body)
	}
	if cur := f.git("rev-parse", "--abbrev-ref", "HEAD"); cur != "main" {
		t.Errorf("the user's branch is %q after accept, want main", cur)
	}
	if !strings.Contains(f.git("log", "-1", "--format=%B"), "TestAbsNegative") && !strings.Contains(f.git("show", "--stat", "HEAD"), "calc_test.go") {
		t.Errorf("the accepted commit does not carry the new test:\n%s", f.git("show", "--stat", "HEAD"))
	}
}
