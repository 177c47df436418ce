package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// The CLI end to end: build the real bcode binary once, run `bcode check`
// on real repositories as a user would, and read the ledger it wrote.

// buildBcode compiles cmd/bcode into dir.
func buildBcode(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bcode")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/bcode-dev/bcode/cmd/bcode")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/bcode: %v\n%s", err, out)
	}
	return bin
}

// cliRun is one finished `bcode` process.
type cliRun struct {
	code           int
	stdout, stderr string
}

func runBcode(t *testing.T, bin string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// BCODE_STATE must not leak in: every run names --state.
	cmd.Env = withoutEnv(os.Environ(), "BCODE_STATE")
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running bcode %s: %v", strings.Join(args, " "), err)
	}
	return cliRun{code, out.String(), errb.String()}
}

func withoutEnv(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// gitIn runs git in dir with no user or system configuration.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testrepo.Open(t, dir).Git(args...)
}

func suiteCase(t *testing.T, name string) labelledCase {
	t.Helper()
	c, err := labelled.Parse(filepath.Join(suiteDir, name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// branchRepo builds the way a user works: the base on main, the change
// committed on a feature branch that is checked out. `bcode check` with no
// revisions then checks merge-base(main)..working tree.
func branchRepo(t *testing.T, c labelledCase) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	if err := labelled.WriteFiles(dir, c.Base); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "base")
	gitIn(t, dir, "checkout", "-q", "-b", "fix")
	if err := labelled.WriteFiles(dir, c.Head); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "the change")
	return dir
}

// worktreeRepo leaves the change uncommitted (and its new test file
// untracked) on main.
func worktreeRepo(t *testing.T, c labelledCase) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	if err := labelled.WriteFiles(dir, c.Base); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "base")
	if err := labelled.WriteFiles(dir, c.Head); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsonReport is the part of `bcode check --json` the issue promises.
type jsonReport struct {
	Verdict string `json:"verdict"`
	Base    string `json:"base"`
	Head    string `json:"head"`
	Tests   []struct {
		Name        string `json:"name"`
		File        string `json:"file"`
		Language    string `json:"language"`
		BaseOutcome string `json:"base_outcome"`
		HeadOutcome string `json:"head_outcome"`
		Credited    *bool  `json:"credited"`
		Reason      string `json:"reason"`
	} `json:"tests"`
	Tamper []json.RawMessage `json:"tamper"`
	Suite  struct {
		Targeted *struct {
			Outcome string `json:"outcome"`
		} `json:"targeted"`
		Full *struct {
			Outcome string `json:"outcome"`
		} `json:"full"`
	} `json:"suite"`
	DurationMS *int64 `json:"duration_ms"`
}

// decodeReport reads the one JSON object and checks every promised key is
// present, not merely decodable.
func decodeReport(t *testing.T, stdout string) jsonReport {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"verdict", "base", "head", "tests", "tamper", "suite", "duration_ms"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON has no %q key", k)
		}
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Suite.Targeted == nil || rep.Suite.Full == nil {
		t.Errorf("JSON suite lacks targeted or full: %s", raw["suite"])
	}
	if rep.DurationMS == nil || *rep.DurationMS <= 0 {
		t.Errorf("duration_ms missing or not positive")
	}
	if rep.Tamper == nil {
		t.Errorf("tamper is null, want a list")
	}
	return rep
}

func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bcode and runs real go test; skipped with -short")
	}
	tmp := t.TempDir()
	bin := buildBcode(t, tmp)
	state := filepath.Join(tmp, "state")
	var recorded []string // verdicts the gate reached, in order

	t.Run("verified", func(t *testing.T) {
		dir := branchRepo(t, suiteCase(t, "go-correct-fix"))
		r := runBcode(t, bin, "check", "--json", "-q", "--repo", dir, "--state", state)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (verified)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		rep := decodeReport(t, r.stdout)
		recorded = append(recorded, rep.Verdict)
		if rep.Verdict != "verified" {
			t.Fatalf("verdict %s", rep.Verdict)
		}
		if want := gitIn(t, dir, "rev-parse", "main"); rep.Base != want {
			t.Errorf("base %s, want the merge-base with main %s", rep.Base, want)
		}
		if want := gitIn(t, dir, "rev-parse", "HEAD"); rep.Head != want && rep.Head == rep.Base {
			t.Errorf("head %s: want the working tree at %s", rep.Head, want)
		}
		var found bool
		for _, tr := range rep.Tests {
			if tr.Name == "TestClampAbove" {
				found = true
				if tr.File != "clamp_high_test.go" || tr.Language != "go" || tr.BaseOutcome != "fail" ||
					tr.HeadOutcome != "pass" || tr.Credited == nil || !*tr.Credited || tr.Reason == "" {
					t.Errorf("TestClampAbove reported as %+v", tr)
				}
			}
		}
		if !found {
			t.Errorf("TestClampAbove not among the tests: %+v", rep.Tests)
		}
		if rep.Suite.Targeted.Outcome != "pass" || rep.Suite.Full.Outcome != "pass" {
			t.Errorf("suites %s/%s, want pass/pass", rep.Suite.Targeted.Outcome, rep.Suite.Full.Outcome)
		}
		if len(rep.Tamper) != 0 {
			t.Errorf("tamper findings on a clean fix: %s", rep.Tamper)
		}
	})

	t.Run("working tree is the default head", func(t *testing.T) {
		dir := worktreeRepo(t, suiteCase(t, "go-worktree-fix"))
		statusBefore := gitIn(t, dir, "status", "--porcelain")
		r := runBcode(t, bin, "check", "--json", "-q", "--repo", dir, "--state", state)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (verified)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		rep := decodeReport(t, r.stdout)
		recorded = append(recorded, rep.Verdict)
		if rep.Verdict != "verified" {
			t.Fatalf("verdict %s", rep.Verdict)
		}
		credited := false
		for _, tr := range rep.Tests {
			credited = credited || (tr.Name == "TestLastOfThree" && tr.Credited != nil && *tr.Credited)
		}
		if !credited {
			t.Errorf("the untracked new test TestLastOfThree was not credited: %+v", rep.Tests)
		}
		// The user's checkout is never touched: same status, nothing staged.
		if after := gitIn(t, dir, "status", "--porcelain"); after != statusBefore {
			t.Errorf("git status changed:\nbefore:\n%s\nafter:\n%s", statusBefore, after)
		}
	})

	t.Run("green exits 1", func(t *testing.T) {
		dir := branchRepo(t, suiteCase(t, "go-passes-on-base"))
		r := runBcode(t, bin, "check", "--json", "-q", "--repo", dir, "--state", state, "--base", "main", "--head", "HEAD")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1 (not verified)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		rep := decodeReport(t, r.stdout)
		recorded = append(recorded, rep.Verdict)
		if rep.Verdict != "green" {
			t.Fatalf("verdict %s, want green", rep.Verdict)
		}
		for _, tr := range rep.Tests {
			if tr.Name == "TestReverseASCII" && (tr.Credited == nil || *tr.Credited || tr.Reason != "passes_on_base") {
				t.Errorf("TestReverseASCII: %+v, want not credited because it passes on the base", tr)
			}
		}
	})

	t.Run("not a git repository", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runBcode(t, bin, "check", "--json", "-q", "--repo", dir, "--state", state)
		if r.code != 2 {
			t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		msg := strings.ToLower(r.stdout + r.stderr)
		if !strings.Contains(msg, "not a git repository") && !(strings.Contains(msg, "not") && strings.Contains(msg, "git")) {
			t.Errorf("the message does not say the directory is not a git repository:\n%s%s", r.stdout, r.stderr)
		}
		if rep := decodeReport(t, r.stdout); rep.Verdict != "error" {
			t.Errorf("verdict %s, want error", rep.Verdict)
		}
	})

	t.Run("bad base revision", func(t *testing.T) {
		dir := branchRepo(t, suiteCase(t, "go-correct-fix"))
		r := runBcode(t, bin, "check", "--json", "-q", "--repo", dir, "--state", state, "--base", "no-such-rev")
		if r.code != 2 {
			t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout+r.stderr, "no-such-rev") {
			t.Errorf("the message does not name the bad revision:\n%s%s", r.stdout, r.stderr)
		}
		if rep := decodeReport(t, r.stdout); rep.Verdict != "error" {
			t.Errorf("verdict %s, want error", rep.Verdict)
		}
	})

	t.Run("human output", func(t *testing.T) {
		dir := branchRepo(t, suiteCase(t, "go-correct-fix"))
		r := runBcode(t, bin, "check", "-q", "--repo", dir, "--state", state)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		recorded = append(recorded, "verified")
		first, _, _ := strings.Cut(r.stdout, "\n")
		if !strings.HasPrefix(first, "VERIFIED") {
			t.Errorf("the first line does not lead with the verdict: %q", first)
		}
		if !strings.Contains(r.stdout, "TestClampAbove") {
			t.Errorf("the table does not list the credited test:\n%s", r.stdout)
		}
	})

	t.Run("each run is in the ledger", func(t *testing.T) {
		ctx := context.Background()
		led, err := ledger.Open(ctx, filepath.Join(state, "ledger.db"))
		if err != nil {
			t.Fatalf("opening the ledger bcode wrote: %v", err)
		}
		defer led.Close()
		runs, err := led.Verifications(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range runs {
			got = append(got, v.Verdict)
			// An error run may end before base or head resolve; it must
			// still name the repository and keep its report.
			if v.Repo == "" || len(v.Report) == 0 || (v.Verdict != "error" && (v.Base == "" || v.Head == "")) {
				t.Errorf("run %d lacks repo, base, head or report: %s %s %s %s", v.ID, v.Verdict, v.Repo, v.Base, v.Head)
			}
		}
		var gate []string
		for _, v := range got {
			if v != "error" {
				gate = append(gate, v)
			}
		}
		if fmt.Sprint(sortedCopy(gate)) != fmt.Sprint(sortedCopy(recorded)) {
			t.Errorf("ledger verdicts %v, want the %d gate runs %v", got, len(recorded), recorded)
		}
	})

	// The issue: "Every bcode check run is recorded." A run that ends in
	// an error before the gate (a bad --base in a real repository) is a
	// run too, and its error is what a user looking at the history needs.
	t.Run("error runs are in the ledger too", func(t *testing.T) {
		ctx := context.Background()
		led, err := ledger.Open(ctx, filepath.Join(state, "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer led.Close()
		runs, err := led.Verifications(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		errRuns := 0
		for _, v := range runs {
			if v.Verdict == "error" {
				errRuns++
			}
		}
		if errRuns == 0 {
			t.Errorf("the bad --base run (verdict error, exit 2) is not in the ledger: check.Run returns before recording on every early error (engine/check/check.go, the fail() path)")
		}
	})
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
