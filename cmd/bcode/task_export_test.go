package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// fixingAgent writes its files in the worktree in one turn and is done.
type fixingAgent map[string]string

func (a fixingAgent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	return fixingSession{files: a, dir: in.Worktree}, nil
}

type fixingSession struct {
	files map[string]string
	dir   string
}

func (s fixingSession) Turn(context.Context) (runner.TurnResult, error) {
	for name, body := range s.files {
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o644); err != nil {
			return runner.TurnResult{}, err
		}
	}
	return runner.TurnResult{Summary: "fix Add and test it", Done: true, TokensUsed: 10}, nil
}

func (fixingSession) Close() error { return nil }

// verifiedTask runs a task to the end on a real Go module with the real
// gate on the host (go test on base and head): the agent fixes Add and
// adds the test that fails on the base. It returns the repository, the
// state directory (whose ledger holds the task) and the task's id.
func verifiedTask(t *testing.T) (repo, state, id string) {
	t.Helper()
	ctx := context.Background()
	repo = testrepo.FromFiles(t, map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.21\n",
		"calc.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
	}).Dir
	state = t.TempDir()
	led, err := ledger.Open(ctx, filepath.Join(state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	tasks := task.New(led)
	tk, err := tasks.Create(ctx, task.CreateInput{Repo: repo, Goal: "make Add add"})
	if err != nil {
		t.Fatal(err)
	}
	scanner, err := secrets.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	agent := fixingAgent{
		"calc.go":      "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Fatalf(\"Add(2, 2) = %d\", got)\n\t}\n}\n",
	}
	r := &runner.Runner{Engine: tasks, Agent: agent, Checker: runner.GateChecker{Sandbox: host.Sandbox{}, Recorder: led, Scanner: scanner}}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	res, err := r.Run(rctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != engine.TaskVerified {
		t.Fatalf("the task ended %s (%s), not verified", res.Task.Status, res.Task.Reason)
	}
	return repo, state, tk.ID
}

func runBcode(args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := run(args, &o, &e)
	return code, o.String(), e.String()
}

// TestExportVerifyRoundTrip: a task verified by the real gate is exported
// as a canonical diff that git applies to the base to give the head's
// tree, with a signed attestation that bcode attest verify accepts with
// the printed public key and refuses, each for its own reason, when the
// diff, the key or the envelope is not the one exported.
func TestExportVerifyRoundTrip(t *testing.T) {
	repo, state, id := verifiedTask(t)
	out := t.TempDir()
	diff, att := filepath.Join(out, "change.diff"), filepath.Join(out, "change.intoto.json")
	os.WriteFile(diff, []byte("an older export, replaced whole\n"), 0o644)

	code, stdout, stderr := runTaskCmd(t, repo, state, "export", id, "--diff", diff, "--attestation", att)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	data, err := os.ReadFile(diff)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if digest := strings.TrimSpace(stdout); digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("printed %q, the file's digest is %x", digest, sum)
	}
	if !strings.Contains(stderr, "verdict verified at level V3, signed by SHA256:") {
		t.Errorf("export says %q", stderr)
	}
	checkApplies(t, repo, id, state, diff)
	// The journal records the export: its digest, and the chain holds.
	code, jl, stderr := runBcode("journal", "export", "--state", state)
	if code != 0 || !strings.Contains(jl, `"kind":"export"`) || !strings.Contains(jl, strings.TrimSpace(stdout)) {
		t.Errorf("journal export after an export: %d %s %s", code, jl, stderr)
	}
	if code, out, stderr := runBcode("journal", "verify", "--state", state); code != 0 || !strings.Contains(out, "chain intact") {
		t.Errorf("journal verify: %d %s %s", code, out, stderr)
	}

	code, pem, stderr := runBcode("attest", "key", "--state", state)
	if code != 0 || !strings.Contains(pem, "-----BEGIN PUBLIC KEY-----") || !strings.HasPrefix(pem, "# keyid SHA256:") {
		t.Fatalf("attest key: %d %q %s", code, pem, stderr)
	}
	pub := filepath.Join(out, "bcode.pub")
	os.WriteFile(pub, []byte(pem), 0o644)

	code, stdout, stderr = runBcode("attest", "verify", "--attestation", att, "--diff", diff, "--key", pub, "--json")
	if code != 0 {
		t.Fatalf("verify: %d %s", code, stderr)
	}
	var v struct {
		DiffChecked bool `json:"diff_checked"`
		Predicate   struct {
			Verdict          string              `json:"verdict"`
			Toolchains       map[string]string   `json:"toolchains"`
			ToolchainsSource string              `json:"toolchains_source"`
			Credited         []string            `json:"credited"`
			Task             struct{ ID string } `json:"task"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, stdout)
	}
	if !v.DiffChecked || v.Predicate.Verdict != "verified" || v.Predicate.Task.ID != id ||
		strings.Join(v.Predicate.Credited, ",") != "go:.:TestAdd" ||
		!strings.HasPrefix(v.Predicate.Toolchains["go"], "go version") || v.Predicate.ToolchainsSource != "export" {
		t.Errorf("verify says %s", stdout)
	}
	// Without --key, the state directory's own key.
	if code, stdout, stderr := runBcode("attest", "verify", "--attestation", att, "--diff", diff, "--state", state); code != 0 || !strings.HasPrefix(stdout, "valid: signed by SHA256:") {
		t.Errorf("verify with the state's key: %d %s %s", code, stdout, stderr)
	}
	refusals(t, out, att, diff, pub)
}

// checkApplies: the exported diff applied to a clone at the task's base
// gives exactly the tree of the task branch's head.
func checkApplies(t *testing.T, repo, id, state, diff string) {
	t.Helper()
	r := testrepo.Open(t, repo)
	led, err := ledger.Open(context.Background(), filepath.Join(state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := led.Task(context.Background(), id)
	led.Close()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	r.Git("clone", "-q", "--no-checkout", repo, clone)
	c := testrepo.Open(t, clone)
	c.Git("checkout", "-q", tk.Base)
	c.Git("apply", "--index", diff)
	if got, want := c.Git("write-tree"), r.Git("rev-parse", tk.Branch+"^{tree}"); got != want {
		t.Errorf("the diff applied to the base gives tree %s, the head has %s", got, want)
	}
}

// refusals: each wrong input exits 1 with its own reason.
func refusals(t *testing.T, out, att, diff, pub string) {
	t.Helper()
	data, _ := os.ReadFile(diff)
	changed := append([]byte(nil), data...)
	changed[len(changed)/2] ^= 1
	changedDiff := filepath.Join(out, "changed.diff")
	os.WriteFile(changedDiff, changed, 0o644)
	env, _ := os.ReadFile(att)
	truncated := filepath.Join(out, "truncated.json")
	os.WriteFile(truncated, env[:len(env)/2], 0o644)
	_, otherPEM, _ := runBcode("attest", "key", "--state", t.TempDir())
	otherPub := filepath.Join(out, "other.pub")
	os.WriteFile(otherPub, []byte(otherPEM), 0o644)
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"one changed byte in the diff", []string{"--attestation", att, "--diff", changedDiff, "--key", pub}, "diff does not match the attested digest"},
		{"another key", []string{"--attestation", att, "--diff", diff, "--key", otherPub}, "signature does not verify"},
		{"a truncated envelope", []string{"--attestation", truncated, "--diff", diff, "--key", pub}, "truncated"},
		{"a missing attestation", []string{"--attestation", filepath.Join(out, "none.json"), "--key", pub}, "does not exist"},
		{"a key that is not PEM", []string{"--attestation", att, "--key", diff}, "no PEM \"PUBLIC KEY\" block"},
		{"no key in the state directory", []string{"--attestation", att, "--state", t.TempDir()}, "--key PUB"},
	} {
		code, stdout, stderr := runBcode(append([]string{"attest", "verify"}, c.args...)...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "invalid: ") || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q (want 1 and %q)", c.name, code, stdout, stderr, c.says)
		}
	}
	for _, args := range [][]string{{"--diff", diff}, {"--attestation", att, "extra"}, {"--attestation", att, "--nope"}} {
		if code, _, stderr := runBcode(append([]string{"attest", "verify"}, args...)...); code != exitUsage || !strings.Contains(stderr, "usage: bcode attest verify") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}

// TestExportRefuses: what export cannot do fails clearly and leaves the
// files it would have written as they were.
func TestExportRefuses(t *testing.T) {
	repo, state, id := verifiedTask(t)
	out := t.TempDir()
	diff, att := filepath.Join(out, "change.diff"), filepath.Join(out, "att.json")
	os.WriteFile(diff, []byte("keep me\n"), 0o644)
	code, stdout, _ := runTaskCmd(t, repo, state, "create", "never run")
	if code != 0 {
		t.Fatal("create")
	}
	fresh := strings.TrimSpace(stdout)
	os.Chmod(filepath.Join(state, "attest.key"), 0o644) // no key yet: nothing to chmod
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no --diff", []string{"export", id}, exitUsage, "give --diff FILE"},
		{"no task id", []string{"export", "--diff", diff}, exitUsage, "give one task ID"},
		{"stdout", []string{"export", id, "--diff", "-"}, exitUsage, "not -"},
		{"an unknown task", []string{"export", "nosuchtask", "--diff", diff}, 1, "no task \"nosuchtask\""},
		{"a task that never ran", []string{"export", fresh, "--diff", diff}, 1, "no change to export"},
		{"one file for both", []string{"export", id, "--diff", diff, "--attestation", diff}, 1, "would both be"},
		{"a directory in the way", []string{"export", id, "--diff", out}, 1, "not a regular file"},
	} {
		code, _, stderr := runTaskCmd(t, repo, state, c.args...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d %q, want %d and %q", c.name, code, stderr, c.code, c.says)
		}
	}
	if b, _ := os.ReadFile(diff); string(b) != "keep me\n" {
		t.Errorf("a refused export changed the diff file: %q", b)
	}
	// A signing key others can read is refused, as ssh refuses one, and
	// nothing is written.
	if code, _, stderr := runBcode("attest", "key", "--state", state); code != 0 {
		t.Fatal(stderr)
	}
	os.Chmod(filepath.Join(state, "attest.key"), 0o644)
	code, _, stderr := runTaskCmd(t, repo, state, "export", id, "--diff", diff, "--attestation", att)
	if code != 1 || !strings.Contains(stderr, "readable by others") || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("exposed key: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(diff); string(b) != "keep me\n" {
		t.Errorf("an export refused for its key changed the diff file: %q", b)
	}
	if _, err := os.Stat(att); err == nil {
		t.Error("an export refused for its key wrote the attestation")
	}
}
