package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// taskRepo is a real checkout whose base config points the model at
// endpoint.
func taskRepo(t *testing.T, endpoint string) string {
	t.Helper()
	return testrepo.FromFiles(t, map[string]string{
		"calc.go":            "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		".bcode/config.toml": "[model]\nendpoint = \"" + endpoint + "\"\n\n[task]\nmax_attempts = 2\n",
	}).Dir
}

func runTaskCmd(t *testing.T, repo, state string, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := run(append(append([]string{"task"}, args...), "--repo", repo, "--state", state), &o, &e)
	return code, o.String(), e.String()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestTaskCommands(t *testing.T) {
	repo := taskRepo(t, closedPort(t))
	state := t.TempDir()

	code, out, errOut := runTaskCmd(t, repo, state, "create", "make Add add", "--selection", "calc.go:3-5", "--criterion", "Add(2, 2) == 4")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)

	code, out, _ = runTaskCmd(t, repo, state, "status", id, "--json")
	var st task.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: %d %s", code, out)
	}
	if st.Task.Selection == nil || st.Task.Selection.Text != "func Add(a, b int) int {\n\treturn a - b\n}\n" ||
		st.Task.Budgets.MaxAttempts != 2 || st.Task.Criteria[0] != "Add(2, 2) == 4" || st.Task.Status != "queued" {
		t.Errorf("status %+v", st.Task)
	}
	if code, out, _ = runTaskCmd(t, repo, state, "status"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "queued") {
		t.Errorf("status list: %d\n%s", code, out)
	}

	// No model: run fails before taking the task, saying how to start one,
	// and records why in the ledger (task.start_failed).
	code, _, errOut = runTaskCmd(t, repo, state, "run", id)
	if code != 1 || !strings.Contains(errOut, "bcode model serve --model FILE.gguf") || !strings.Contains(errOut, "llama-server --jinja") {
		t.Fatalf("run without a model: %d %s", code, errOut)
	}
	code, out, _ = runTaskCmd(t, repo, state, "events", id, "--json")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"task.created"`) || !strings.Contains(out, `"task.start_failed"`) || !strings.Contains(out, `"missing":"model"`) {
		t.Errorf("events after a refused run: %s", out)
	}

	if code, _, errOut = runTaskCmd(t, repo, state, "diff", id); code != 1 || !strings.Contains(errOut, "never ran") {
		t.Errorf("diff of a task that never ran: %d %s", code, errOut)
	}
	if code, _, errOut = runTaskCmd(t, repo, state, "accept", id); code != 1 || !strings.Contains(errOut, "no commits") {
		t.Errorf("accept of a task with nothing: %d %s", code, errOut)
	}
	if code, out, _ = runTaskCmd(t, repo, state, "cancel", id); code != 0 || !strings.Contains(out, "cancelled") {
		t.Errorf("cancel: %d %s", code, out)
	}
	if code, out, _ = runTaskCmd(t, repo, state, "events", id, "--follow"); code != 0 || !strings.Contains(out, "task.cancelled") {
		t.Errorf("events --follow of a settled task: %d %s", code, out)
	}
	if code, out, _ = runTaskCmd(t, repo, state, "reject", id); code != 0 || !strings.Contains(out, "rejected") {
		t.Errorf("reject: %d %s", code, out)
	}
	if code, _, errOut = runTaskCmd(t, repo, state, "status", "nosuchtask"); code != 1 || !strings.Contains(errOut, `no task "nosuchtask"`) {
		t.Errorf("unknown task: %d %s", code, errOut)
	}
	for _, bad := range [][]string{{"create"}, {"run"}, {"frobnicate"}, {"create", "x", "--selection", "calc.go:9-99"}, {"resume", "x", "--attempts", "-1"}} {
		if code, _, _ := runTaskCmd(t, repo, state, bad...); code == 0 {
			t.Errorf("%v succeeded", bad)
		}
	}
}

// A model that answers is not enough: the agent needs its sandbox (Docker,
// the image, bcode-agent), and run says which part is missing and how to
// get it instead of pretending — without touching the task.
func TestTaskRunModelUpNoAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	repo := taskRepo(t, srv.URL)
	state := t.TempDir()
	_, out, _ := runTaskCmd(t, repo, state, "create", "make Add add")
	id := strings.TrimSpace(out)
	code, _, errOut := runTaskCmd(t, repo, state, "run", id)
	missing := strings.Contains(errOut, "bcode-agent not found") || strings.Contains(errOut, "docker") ||
		strings.Contains(errOut, "bcode sandbox build") || strings.Contains(errOut, "no agent backend")
	if code != 1 || !missing {
		t.Fatalf("run with a model but no agent: %d %s", code, errOut)
	}
	if _, out, _ := runTaskCmd(t, repo, state, "status", id, "--json"); !strings.Contains(out, `"status": "queued"`) || strings.Contains(out, `"lease"`) {
		t.Errorf("the refused run changed the task:\n%s", out)
	}
}
