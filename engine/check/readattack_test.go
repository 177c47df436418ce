package check_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/docker/dockertest"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// The read boundary end to end (issue 26, part 1): an agent's change holds
// a Go test that, while the gate's evidence runs it, replaces the
// per-test coverage record bcode reads afterwards (the file its
// BCODE_COVER_OUT names) with a link to /dev/zero, a fifo or a sparse
// 10 GiB file. An unconfined read of it exhausts host memory or blocks
// forever; the confined reader refuses it before reading a byte more than
// its cap (sandbox/confinedtest holds that), and the gate ends with a
// refused_read finding and a tampered verdict, never an environment error
// and never a hang.
func TestGateRefusesACoverageRecordTheTestsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real go test and mutation evidence; skipped with -short")
	}
	for _, c := range []struct{ name, plant, kind string }{
		{"LinkToDevZero", `os.Remove(p); os.Symlink("/dev/zero", p)`, "symbolic link"},
		{"Fifo", `os.Remove(p); syscall.Mkfifo(p, 0o644)`, "fifo"},
		{"SparseTenGiB", `os.Truncate(p, 10<<30)`, "size cap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := coverPlantRepo(t, c.plant)
			rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD",
				Runner: &host.Runner{Extra: []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}}})
			if err != nil {
				t.Fatal(err)
			}
			var found *verify.Finding
			for i, f := range rep.Tamper {
				if f.Code == verify.FindingRefusedRead {
					found = &rep.Tamper[i]
				}
			}
			if found == nil {
				t.Fatalf("no %s finding: verdict %s, reasons %+v, tamper %+v", verify.FindingRefusedRead, rep.Verdict, rep.Reasons, rep.Tamper)
			}
			t.Logf("%s: %s", found.Path, found.Message)
			if !strings.Contains(found.Message, c.kind) {
				t.Errorf("finding %q does not say it found a %s", found.Message, c.kind)
			}
			if rep.Verdict != verify.Tampered {
				t.Errorf("verdict %s, want tampered: %+v", rep.Verdict, rep.Reasons)
			}
			hasReason := false
			for _, rs := range rep.Reasons {
				hasReason = hasReason || rs.Code == verify.ReasonRefusedRead
			}
			if !hasReason {
				t.Errorf("reasons %+v lack %s", rep.Reasons, verify.ReasonRefusedRead)
			}
		})
	}
}

// coverPlantRepo is a repository whose head fixes Abs and adds a test that
// runs plant (Go statements over p, the path BCODE_COVER_OUT names) when
// evidence runs it.
func coverPlantRepo(t *testing.T, plant string) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	r.write(map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.26\n",
		"calc/calc.go": "package calc\n\nfunc Abs(x int) int { return x }\n",
	})
	r.commit("base")
	r.write(map[string]string{
		"calc/calc.go": "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n",
		"calc/abs_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"syscall\"\n\t\"testing\"\n)\n\n" +
			"var _ = syscall.Mkfifo\n\n" +
			"func TestAbsNegative(t *testing.T) {\n" +
			"\tif p := os.Getenv(\"BCODE_COVER_OUT\"); p != \"\" {\n\t\t" + plant + "\n\t}\n" +
			"\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n",
	})
	r.commit("head")
	return r
}

// TestCLICheckRefusesACoverageRecordLinkedToDevZero is the same attack
// through the real `bcode check` binary on the host runner: it exits with
// the tampered verdict and a refused_read finding in its JSON, as a user
// (or the task runner) sees it.
func TestCLICheckRefusesACoverageRecordLinkedToDevZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bcode and runs real go test; skipped with -short")
	}
	tmp := t.TempDir()
	bin := buildBcode(t, tmp)
	r := coverPlantRepo(t, `os.Remove(p); os.Symlink("/dev/zero", p)`)
	res := runBcode(t, bin, "check", "--json", "-q", "--repo", r.dir, "--base", "HEAD~1", "--head", "HEAD", "--state", filepath.Join(tmp, "state"))
	rep := decodeReport(t, res.stdout)
	if rep.Verdict != string(verify.Tampered) {
		t.Fatalf("verdict %s (exit %d), want tampered\nstdout:\n%s\nstderr:\n%s", rep.Verdict, res.code, res.stdout, res.stderr)
	}
	found := false
	for _, raw := range rep.Tamper {
		var f verify.Finding
		if json.Unmarshal(raw, &f) == nil && f.Code == verify.FindingRefusedRead {
			found = true
			t.Logf("exit %d: %s: %s", res.code, f.Path, f.Message)
		}
	}
	if !found {
		t.Errorf("no %s finding in %s", verify.FindingRefusedRead, res.stdout)
	}
	if res.code == 0 {
		t.Errorf("exit 0 for a tampered change")
	}
}

// TestGateRefusesAPytestLogTheTestsReplaced is the attack on the Python
// adapter's reads, on the host runner and in the Docker sandbox: a test of
// the change replaces the live log bcode's pytest plugin writes (log.jsonl
// in the hidden scratch directory of the snapshot), which the gate reads on
// the host after the run,
// with a link to /dev/zero. Whichever runner ran the test, the read is the
// host's, and the gate ends tampered with a refused_read finding.
func TestGateRefusesAPytestLogTheTestsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pytest (and containers); skipped with -short")
	}
	testenv.SystemPytest(t)
	runners := []struct {
		name string
		opts func(t *testing.T) check.Options
	}{
		{"Host", func(t *testing.T) check.Options { return check.Options{Runner: host.New()} }},
		{"Docker", func(t *testing.T) check.Options {
			e := dockertest.Connect(t)
			const image = "bcode-sandbox:reads-py"
			dockertest.Image(t, e, image)
			return check.Options{Sandbox: docker.Sandbox{Template: docker.Config{Image: image}}}
		}},
	}
	for _, rn := range runners {
		t.Run(rn.name, func(t *testing.T) {
			r := clampFixRepo(t, nil)
			// The plugin hides the log's name from the tests; the
			// snapshot's hidden scratch directory gives it away.
			r.write(map[string]string{"tests/test_plant.py": "import glob\nimport os\n\n\n" +
				"def test_plant():\n" +
				"    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n" +
				"    for p in glob.glob(os.path.join(root, '.bcode-pytest-*', 'log.jsonl')):\n" +
				"        os.remove(p)\n" +
				"        os.symlink('/dev/zero', p)\n"})
			r.commit("head plants")
			o := rn.opts(t)
			o.Repo, o.Base, o.Head, o.NoEvidence = r.dir, "HEAD~2", "HEAD", true
			o.Scanner = testScanner()
			rep, err := check.Run(context.Background(), o)
			if rep == nil {
				t.Fatalf("no report: %v", err)
			}
			var found *verify.Finding
			for i, f := range rep.Tamper {
				if f.Code == verify.FindingRefusedRead {
					found = &rep.Tamper[i]
				}
			}
			if found == nil || rep.Verdict != verify.Tampered {
				t.Fatalf("verdict %s, findings %+v, reasons %+v: want tampered with %s", rep.Verdict, rep.Tamper, rep.Reasons, verify.FindingRefusedRead)
			}
			t.Logf("%s runner: %s: %s", rep.Runner, found.Path, found.Message)
		})
	}
}
