package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/fake"
)

// bcodeLS builds cmd/bcode-ls for one test (the build cache makes every
// build after the first a link).
func bcodeLS(t *testing.T) string {
	t.Helper()
	evidenceTools(t)
	bin := filepath.Join(t.TempDir(), "bcode-ls")
	if out, err := exec.Command("go", "build", "-o", bin, "../bcode-ls").CombinedOutput(); err != nil {
		t.Fatalf("building bcode-ls: %v\n%s", err, out)
	}
	return bin
}

// survivorRepo is the shop fixture with an uncommitted change whose
// boundary no test pins down.
func survivorRepo(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../server/testdata/boundary.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := fake.Repo(t, b)
	p := filepath.Join(dir, "price", "price.go")
	src, _ := os.ReadFile(p)
	if err := os.WriteFile(p, bytes.Replace(src, []byte("n >= 10"), []byte("n > 10"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("BCODE_STATE", t.TempDir())
	var out, errb bytes.Buffer
	code := cmdCI(context.Background(), app.Open(app.Options{}), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestCIGitHub: survivors come out as GitHub warnings on the right line,
// through a real bcode-ls child process, and the exit status is 1.
func TestCIGitHub(t *testing.T) {
	ls := bcodeLS(t)
	dir := survivorRepo(t)
	code, out, errs := runCI(t, "--server", ls, "--repo", dir, "--github", "-q")
	if code != ciSurvivors {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ciSurvivors, out, errs)
	}
	if !strings.Contains(out, "::warning file=price/price.go,line=5,col=5,") || !strings.Contains(out, "conditional_boundary") {
		t.Errorf("no boundary warning on price.go line 5:\n%s", out)
	}
}

// TestCISARIF: the same run as SARIF, with UTF-16 columns.
func TestCISARIF(t *testing.T) {
	ls := bcodeLS(t)
	dir := survivorRepo(t)
	file := filepath.Join(t.TempDir(), "out.sarif")
	code, out, errs := runCI(t, "--server", ls, "--repo", dir, "--sarif", file, "-q")
	if code != ciSurvivors {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine, StartColumn int
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "2.1.0" || len(doc.Runs) != 1 {
		t.Fatalf("not SARIF 2.1.0 with one run: %s", b)
	}
	found := false
	for _, r := range doc.Runs[0].Results {
		loc := r.Locations[0].PhysicalLocation
		if r.RuleID == "conditional_boundary" && r.Level == "warning" && loc.ArtifactLocation.URI == "price/price.go" && loc.Region.StartLine == 5 && loc.Region.StartColumn == 5 {
			found = true
		}
	}
	if !found {
		t.Errorf("no conditional_boundary warning at price/price.go:5:5 in\n%s", b)
	}
}

// TestCIClean: a branch with no change passes.
func TestCIClean(t *testing.T) {
	ls := bcodeLS(t)
	b, err := os.ReadFile("../../server/testdata/boundary.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := fake.Repo(t, b)
	code, out, errs := runCI(t, "--server", ls, "--repo", dir)
	if code != ciClean {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestCIErrors: a missing server, a bad base and bad flags are clear
// errors with exit status 2.
func TestCIErrors(t *testing.T) {
	t.Run("no server", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		code, _, errs := runCI(t, "--repo", t.TempDir())
		if code != ciError || !strings.Contains(errs, "bcode-ls not found") || !strings.Contains(errs, "go install") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
	t.Run("exclusive formats", func(t *testing.T) {
		code, _, errs := runCI(t, "--github", "--sarif", "x")
		if code != ciError || !strings.Contains(errs, "exclusive") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
	t.Run("bad base", func(t *testing.T) {
		ls := bcodeLS(t)
		dir := survivorRepo(t)
		code, _, errs := runCI(t, "--server", ls, "--repo", dir, "--base", "no-such-rev", "-q")
		if code != ciError || !strings.Contains(errs, "not a revision") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
	t.Run("not a git checkout", func(t *testing.T) {
		ls := bcodeLS(t)
		code, _, errs := runCI(t, "--server", ls, "--repo", t.TempDir(), "-q")
		if code != ciError || !strings.Contains(errs, "not a git checkout") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
}

// sarifResults reduces a SARIF file to what code scanning tracks an alert
// by: rule, level, place, message and fingerprints.
func sarifResults(t *testing.T, b []byte) (tool string, results []string) {
	t.Helper()
	var doc struct {
		Runs []struct {
			ColumnKind string `json:"columnKind"`
			Tool       struct {
				Driver struct {
					Name string `json:"name"`
				} `json:"driver"`
			} `json:"tool"`
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("not SARIF with one run (%v):\n%s", err, b)
	}
	for _, r := range doc.Runs[0].Results {
		results = append(results, string(r))
	}
	sort.Strings(results)
	return doc.Runs[0].Tool.Driver.Name + " " + doc.Runs[0].ColumnKind, results
}

// TestCISARIFMatchesEvidence: `bcode ci --sarif` (through a real bcode-ls)
// and `bcode evidence --sarif` (in process) give the same tool, column
// kind, results and fingerprints for the same change, so switching from
// one to the other keeps code-scanning alerts tracked.
func TestCISARIFMatchesEvidence(t *testing.T) {
	ls := bcodeLS(t)
	dir := survivorRepo(t)
	file := filepath.Join(t.TempDir(), "ci.sarif")
	if code, out, errs := runCI(t, "--server", ls, "--repo", dir, "--sarif", file, "-q"); code != ciSurvivors {
		t.Fatalf("bcode ci: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	ciSARIF, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, evSARIF, errs := runEvidence(t, "--repo", dir, "--sarif")
	if code != evidenceSurvivors {
		t.Fatalf("bcode evidence: exit %d\nstderr:\n%s", code, errs)
	}
	ciTool, ciRes := sarifResults(t, ciSARIF)
	evTool, evRes := sarifResults(t, []byte(evSARIF))
	if ciTool != evTool {
		t.Errorf("tool and column kind differ: ci %q, evidence %q", ciTool, evTool)
	}
	if len(ciRes) == 0 || !strings.Contains(strings.Join(ciRes, "\n"), `"bcodeMutantId/v1"`) {
		t.Fatalf("no fingerprinted results:\n%s", ciSARIF)
	}
	if strings.Join(ciRes, "\n") != strings.Join(evRes, "\n") {
		t.Errorf("results differ\nbcode ci:\n%s\nbcode evidence:\n%s", strings.Join(ciRes, "\n"), strings.Join(evRes, "\n"))
	}
}

// TestCIStepSummaryAndMutationReport: with GITHUB_STEP_SUMMARY set, --github
// appends a table of every mutant; --mutation-report names test files, not
// a package directory.
func TestCIStepSummaryAndMutationReport(t *testing.T) {
	ls := bcodeLS(t)
	dir := survivorRepo(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	report := filepath.Join(t.TempDir(), "report.json")
	code, out, errs := runCI(t, "--server", ls, "--repo", dir, "--github", "--mutation-report", report, "-q")
	if code != ciSurvivors {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "## bcode evidence") || !strings.Contains(string(b), "| survived | `price/price.go:5` |") {
		t.Errorf("step summary lacks the surviving mutant:\n%s", b)
	}
	var doc struct {
		TestFiles map[string]struct {
			Source string `json:"source"`
			Tests  []struct{ ID, Name string }
		} `json:"testFiles"`
	}
	rb, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.TestFiles) == 0 {
		t.Fatalf("no test files in\n%s", rb)
	}
	for name, tf := range doc.TestFiles {
		if !strings.HasSuffix(name, "_test.go") || tf.Source == "" || len(tf.Tests) == 0 {
			t.Errorf("test file %q: want a _test.go path with its source and tests, got %d bytes, %d tests", name, len(tf.Source), len(tf.Tests))
		}
	}
}
