package editorstest

import (
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

	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// The editor flow of a real task: bcode-ls as a user runs it (its agent
// is bcode-agent in the Docker sandbox), the scripted model server (the
// one stand-in for a model) named in the fixture's base config, and the
// sandbox image built with `bcode sandbox build`.

// flowImage is the sandbox image these tests build.
const flowImage = "bcode-sandbox:editor-e2e"

var (
	flowOnce  sync.Once
	flowAgent string // bcode-agent built from this tree
	flowBcode string // bcode built from this tree
	flowErr   error
	dockerErr error
)

// requireTaskFlow builds bcode and bcode-agent and the sandbox image once,
// or skips (fails under BCODE_REQUIRE_ALL=1) without a Docker engine.
func requireTaskFlow(t *testing.T) string {
	t.Helper()
	flowOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		e, err := docker.Connect(ctx)
		cancel()
		if err != nil {
			dockerErr = err
			return
		}
		e.Close()
		dir, err := os.MkdirTemp("", "bcode-editor-flow-")
		if err != nil {
			flowErr = err
			return
		}
		flowDirs = append(flowDirs, dir)
		for _, b := range []struct{ out, pkg, cgo string }{
			{"bcode", "./cmd/bcode", ""},
			{"bcode-agent", "./cmd/bcode-agent", "CGO_ENABLED=0"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Dir = repoRoot(t)
			cmd.Env = append(os.Environ(), b.cgo)
			if out, err := cmd.CombinedOutput(); err != nil {
				flowErr = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
		cmd := exec.Command(filepath.Join(dir, "bcode"), "sandbox", "build", "--image", flowImage, "--state", filepath.Join(dir, "state"))
		if out, err := cmd.CombinedOutput(); err != nil {
			flowErr = fmt.Errorf("bcode sandbox build: %v\n%s", err, out)
			return
		}
		flowAgent = filepath.Join(dir, "bcode-agent")
		flowBcode = filepath.Join(dir, "bcode")
	})
	if dockerErr != nil {
		need(t, false, "a Docker engine", "start dockerd (apt-get install docker.io; dockerd &): "+dockerErr.Error())
	}
	if flowErr != nil {
		t.Fatal(flowErr)
	}
	return flowAgent
}

// dockerAnswers reports whether a Docker engine answers within seconds.
func dockerAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := docker.Connect(ctx)
	if err != nil {
		return false
	}
	e.Close()
	return true
}

// flowDirs are removed by TestMain.
var flowDirs []string

// FlowFixture is a clean checkout of a Go module (a shop's discount from
// 10 items, to start after 10) whose base config names the scripted model
// and the sandbox image, and a state dir for bcode-ls.
type FlowFixture struct {
	Repo, State string
	Model       *modeltest.Server
	Agent       string // bcode-agent, for BCODE_AGENT
}

const flowConfig = `[model]
endpoint = %q

[gate]
flake_runs = 1

[task]
max_attempts = 1
max_turns = 8
wall_clock = "10m"

[evidence]
compile_timeout = "5m"
run_timeout = "2m"

[sandbox]
image = %q
`

// NewFlowFixture builds the checkout and starts the model server with the
// agent's script: view price.go, move the boundary, add a test that pins
// it, finish.
func NewFlowFixture(t *testing.T) *FlowFixture {
	t.Helper()
	agent := requireTaskFlow(t)
	tool := func(name string, args map[string]any) modeltest.Step {
		b, _ := json.Marshal(args)
		return modeltest.Step{ToolCalls: []modeltest.Call{{Name: name, Arguments: string(b)}}}
	}
	model := modeltest.New(modeltest.Options{Tools: true},
		tool("file_editor", map[string]any{"command": "view", "path": "price/price.go"}),
		tool("file_editor", map[string]any{"command": "str_replace", "path": "price/price.go", "old_str": "n >= 10", "new_str": "n > 10"}),
		tool("file_editor", map[string]any{"command": "str_replace", "path": "price/price_test.go", "old_str": "func TestDiscount(", "new_str": "func TestDiscountAtTen(t *testing.T) {\n\tif Discount(10) != 0 {\n\t\tt.Fatal(\"10 items get no discount\")\n\t}\n\tif Discount(11) != 5 {\n\t\tt.Fatal(\"11 items get 5%\")\n\t}\n}\n\nfunc TestDiscount("}),
		tool("finish", map[string]any{"summary": "The discount starts after 10 items; TestDiscountAtTen pins it."}),
	)
	t.Cleanup(model.Close)
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	f := &FlowFixture{Repo: filepath.Join(dir, "shop"), State: filepath.Join(dir, "state"), Model: model, Agent: agent}
	r := testrepo.Init(t, f.Repo)
	r.Write(map[string]string{
		"go.mod":              "module example.com/shop\n\ngo 1.22\n",
		"price/price.go":      "package price\n\n// Discount returns the discount in percent for a basket of n items.\nfunc Discount(n int) int {\n\tif n >= 10 {\n\t\treturn 5\n\t}\n\treturn 0\n}\n",
		"price/price_test.go": "package price\n\nimport \"testing\"\n\nfunc TestDiscount(t *testing.T) {\n\tif Discount(20) != 5 {\n\t\tt.Fatal(\"20 items get 5%\")\n\t}\n\tif Discount(1) != 0 {\n\t\tt.Fatal(\"1 item gets nothing\")\n\t}\n}\n",
		".bcode/config.toml":  fmt.Sprintf(flowConfig, model.URL, flowImage),
	})
	r.Commit("price: a discount from 10 items")
	if err := os.MkdirAll(f.State, 0o700); err != nil {
		t.Fatal(err)
	}
	return f
}

// Env is the environment bcode-ls and the editor run with. The sandbox's
// seed build cache persists between runs, as the go command's own does
// (the fixture is ours and holds no secrets): a cold standard library
// takes minutes to compile in a container on a loaded machine.
func (f *FlowFixture) Env(ls string) []string {
	return append(os.Environ(),
		"BCODE_STATE="+f.State,
		"BCODE_LS="+ls,
		"BCODE_AGENT="+f.Agent,
		"BCODE_FLOW_REPO="+f.Repo,
		"BCODE_SANDBOX_GOCACHE="+flowSeed(),
	)
}

// flowSeed is the sandbox's seed build cache for these tests.
func flowSeed() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "bcode", "sandbox-gocache", "editor-tests")
}

// installBeside puts the flow's bcode beside bcode-ls, where bcode-ls
// finds it to serve the seed build cache (as `go install ./cmd/...`
// installs them).
func installBeside(t *testing.T, ls string) {
	t.Helper()
	b, err := os.ReadFile(flowBcode)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(filepath.Dir(ls), "bcode")
	if _, err := os.Stat(dst); err == nil {
		return
	}
	if err := os.WriteFile(dst+".tmp", b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
}

// Git runs git in the fixture's checkout.
func (f *FlowFixture) Git(t *testing.T, args ...string) string {
	t.Helper()
	return testrepo.Open(t, f.Repo).Git(args...)
}

// loggedServer is bcode-ls behind a script that keeps its log (-v, its
// stderr) in a file, for the failure message.
func loggedServer(t *testing.T, ls string) (cmd, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "bcode-ls.log")
	cmd = filepath.Join(dir, "bcode-ls")
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\" -v 2>>%q\n", ls, log)
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cmd, log
}

// checkLanded fails unless main holds the agent's fix and its test.
func (f *FlowFixture) checkLanded(t *testing.T) {
	t.Helper()
	calc, _ := os.ReadFile(filepath.Join(f.Repo, "price", "price.go"))
	test, _ := os.ReadFile(filepath.Join(f.Repo, "price", "price_test.go"))
	if !strings.Contains(string(calc), "n > 10") || !strings.Contains(string(test), "TestDiscountAtTen") {
		t.Errorf("main does not hold the task's change:\n%s\n%s\n%s", calc, test, f.Git(t, "log", "--oneline", "-5"))
	}
	if st := f.Git(t, "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Errorf("the checkout is not clean after accept: %s", st)
	}
}

// TestNeovimTaskFlow is the editor flow in headless Neovim against the
// real bcode-ls: select lines, run the code action, type the goal
// (vim.ui.input), the task runs against the scripted model in the Docker
// sandbox, the list shows it running with its attempt and turn, it ends
// verified, the end offers Diff, Accept and Reject, and Accept lands it
// on main.
func TestNeovimTaskFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("a real task in the sandbox: not in -short")
	}
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	ls := bcodeLS(t)
	f := NewFlowFixture(t)
	installBeside(t, ls)
	start := time.Now()
	logged, log := loggedServer(t, ls)
	cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile tests/task_flow.lua")
	cmd.Dir = filepath.Join(repoRoot(t), "nvim-plugin")
	cmd.Env = f.Env(logged)
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "step ") || strings.HasPrefix(l, "ok ") {
			t.Log(l)
		}
	}
	if err != nil || !strings.Contains(string(out), "# pass 1 fail 0") {
		b, _ := os.ReadFile(log)
		t.Fatalf("nvim: %v after %s\n%s\n--- bcode-ls's log:\n%s", err, time.Since(start).Round(time.Second), out, b)
	}
	f.checkLanded(t)
	t.Logf("Neovim task flow: %s", time.Since(start).Round(time.Second))
}
