package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

func evidenceTools(t *testing.T) {
	t.Helper()
	testenv.Git(t)
	testenv.Go(t)
}

// evidenceRepo commits base then head in a fresh repository.
func evidenceRepo(t *testing.T, base, head map[string]string) string {
	t.Helper()
	r := testrepo.FromFiles(t, base)
	r.Write(head)
	r.Commit("head")
	return r.Dir
}

func runEvidence(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdEvidence(context.Background(), app.Open(app.Options{}), append(args, "-q"), &out, &errb)
	return code, out.String(), errb.String()
}

const evBase = "package lim\n\nfunc Keep() {}\n"

const evHead = `package lim

func Keep() {}

// Under reports whether n is at most 10.
func Under(n int) bool {
	return n <= 10
}
`

func TestEvidenceSurvivorExitsOne(t *testing.T) {
	evidenceTools(t)
	dir := evidenceRepo(t, map[string]string{
		"go.mod":          "module example.com/lim\n\ngo 1.22\n",
		"lim/lim.go":      evBase,
		"lim/lim_test.go": "package lim\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) { Keep() }\n",
	}, map[string]string{
		"lim/lim.go":      evHead,
		"lim/lim_test.go": "package lim\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) { Keep() }\n\nfunc TestUnder(t *testing.T) {\n\tif !Under(1) || Under(99) {\n\t\tt.Fatal(\"Under\")\n\t}\n}\n",
	})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, out, errs := runEvidence(t, "--repo", dir, "--base", "HEAD~1", "--head", "HEAD", "--workers", "2")
	if code != evidenceSurvivors {
		t.Fatalf("exit %d, want 1 (survivors)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.HasPrefix(out, "Surviving mutants") || !strings.Contains(out, "lim/lim.go:7:9  conditional_boundary  n <= 10  →  n < 10") || !strings.Contains(out, "tests run: TestUnder") {
		t.Errorf("human output lacks the survivor with its place, texts and tests:\n%s", out)
	}
	// JSON of the same run (the baseline now comes from the cache).
	code, out, errs = runEvidence(t, "--repo", dir, "--base", "HEAD~1", "--head", "HEAD", "--json")
	if code != evidenceSurvivors {
		t.Fatalf("--json exit %d: %s", code, errs)
	}
	var rep struct {
		Mutants []struct{ File, Operator, Verdict, Mutated string }
		Stats   struct {
			BaselineCached int `json:"baseline_cached"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if len(rep.Mutants) == 0 || rep.Stats.BaselineCached != 1 {
		t.Errorf("JSON: %d mutants, baseline cached %d", len(rep.Mutants), rep.Stats.BaselineCached)
	}
	report := filepath.Join(t.TempDir(), "mutation.json")
	code, out, _ = runEvidence(t, "--repo", dir, "--base", "HEAD~1", "--head", "HEAD", "--sarif", "--mutation-report", report)
	if code != evidenceSurvivors || !strings.Contains(out, `"version": "2.1.0"`) {
		t.Errorf("--sarif exit %d:\n%s", code, out)
	}
	if data, err := os.ReadFile(report); err != nil || !bytes.Contains(data, []byte(`"schemaVersion": "1"`)) {
		t.Errorf("mutation report not written: %v", err)
	}
}

func TestEvidenceBaselineRedExitsTwo(t *testing.T) {
	evidenceTools(t)
	dir := evidenceRepo(t, map[string]string{
		"go.mod":          "module example.com/lim\n\ngo 1.22\n",
		"lim/lim.go":      evBase,
		"lim/lim_test.go": "package lim\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) { Keep() }\n",
	}, map[string]string{
		"lim/lim.go":      evHead,
		"lim/lim_test.go": "package lim\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) { Keep() }\n\nfunc TestBroken(t *testing.T) {\n\tif Under(1) {\n\t\tt.Fatal(\"broken on purpose\")\n\t}\n}\n",
	})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, _, errs := runEvidence(t, "--repo", dir, "--base", "HEAD~1", "--head", "HEAD")
	if code != evidenceError || !strings.Contains(errs, "baseline") || !strings.Contains(errs, "TestBroken") || !strings.Contains(errs, "must pass its own tests") {
		t.Fatalf("exit %d, want 2 naming TestBroken and explaining the red baseline; stderr:\n%s", code, errs)
	}
}

func TestEvidenceBadInputsExitTwo(t *testing.T) {
	evidenceTools(t)
	notRepo := t.TempDir()
	if code, _, errs := runEvidence(t, "--repo", notRepo); code != evidenceError || errs == "" {
		t.Errorf("not a git repo: exit %d, stderr %q", code, errs)
	}
	dir := evidenceRepo(t, map[string]string{"go.mod": "module example.com/x\n\ngo 1.22\n"}, map[string]string{"a.go": "package x\n"})
	if code, _, errs := runEvidence(t, "--repo", dir, "--base", "no-such-rev", "--head", "HEAD"); code != evidenceError || errs == "" {
		t.Errorf("bad revision: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runEvidence(t, "--repo", dir, "--json", "--sarif"); code != evidenceError || !strings.Contains(errs, "exclusive") {
		t.Errorf("two formats: exit %d, stderr %q", code, errs)
	}
	// A change with no mutable code is clean, not an error.
	if code, out, errs := runEvidence(t, "--repo", dir, "--base", "HEAD~1", "--head", "HEAD"); code != evidenceClean || !strings.Contains(out, "No mutable code") {
		t.Errorf("no mutable code: exit %d\n%s\n%s", code, out, errs)
	}
}
