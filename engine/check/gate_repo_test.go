package check_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// gitRepo is a scratch repository driven by plain git without the user's
// configuration.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	testenv.Git(t)
	testenv.Go(t)
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) {
	r.t.Helper()
	if out, err := testrepo.Command(r.dir, append([]string{"-c", "protocol.file.allow=always"}, args...)...).CombinedOutput(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (r *gitRepo) write(files map[string]string) {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *gitRepo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

// TestGateReadsASymlinkedTestFileAsGoTestDoes: the head's test file is a
// symbolic link to a file elsewhere in the repository. go test reads the
// file it points to, and so does the gate: the link's new test fails on the
// base (with the link and its target laid over it) and passes on the head.
func TestGateReadsASymlinkedTestFileAsGoTestDoes(t *testing.T) {
	r := newGitRepo(t)
	r.write(map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.26\n",
		"calc/calc.go": "package calc\n\nfunc Abs(x int) int { return x }\n",
	})
	r.commit("base")
	r.write(map[string]string{
		"calc/calc.go":          "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n",
		"shared/abs_test.go.in": "package calc\n\nimport \"testing\"\n\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n",
	})
	if err := os.Symlink("../shared/abs_test.go.in", filepath.Join(r.dir, "calc", "abs_test.go")); err != nil {
		t.Fatal(err)
	}
	r.commit("head")
	rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD",
		Runner: &host.Runner{Extra: []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}}, NoEvidence: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verify.Verified {
		t.Fatalf("verdict %s, want verified: reasons %+v tests %+v tamper %+v", rep.Verdict, rep.Reasons, rep.Tests, rep.Tamper)
	}
}

// TestGateBuildsFromSubmodulesAtTheRecordedCommits: the package the
// code under test imports lives in a git submodule (a file:// URL) whose
// own history has moved on since the superproject recorded it (its newest
// commit renames the function the superproject calls). Each snapshot gets
// the submodule at the commit the superproject records, so both sides
// build and the fix in the superproject is credited; an empty submodule
// directory, or the submodule's newest commit, would not build on either
// side. In a checkout whose submodules were initialized the objects come
// from .git/modules; in a plain clone that never ran `git submodule
// update`, from bcode's own clone of the file:// URL.
func TestGateBuildsFromSubmodulesAtTheRecordedCommits(t *testing.T) {
	sub := newGitRepo(t)
	sub.write(map[string]string{"calc.go": "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n"})
	sub.commit("abs")
	super := newGitRepo(t)
	super.write(map[string]string{
		"go.mod":          "module example.com/m\n\ngo 1.26\n",
		"app/app.go":      "package app\n\nimport \"example.com/m/third_party/calc\"\n\nfunc Distance(a, b int) int { return calc.Abs(a) - calc.Abs(b) }\n",
		"app/app_test.go": "package app\n\nimport \"testing\"\n\nfunc TestDistanceSame(t *testing.T) {\n\tif Distance(2, 2) != 0 {\n\t\tt.Fatal(Distance(2, 2))\n\t}\n}\n",
	})
	super.git("submodule", "add", "-q", "file://"+sub.dir, "third_party/calc")
	super.commit("base: Distance is wrong")
	super.write(map[string]string{
		"app/app.go":          "package app\n\nimport \"example.com/m/third_party/calc\"\n\nfunc Distance(a, b int) int { return calc.Abs(a - b) }\n",
		"app/reverse_test.go": "package app\n\nimport \"testing\"\n\nfunc TestDistanceReversed(t *testing.T) {\n\tif Distance(1, 4) != 3 {\n\t\tt.Fatal(Distance(1, 4))\n\t}\n}\n",
	})
	super.commit("head: fixed, with a test")
	// The submodule moves on; the superproject still records the old commit.
	sub.write(map[string]string{"calc.go": "package calc\n\nfunc AbsInt(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n"})
	sub.commit("rename Abs")

	clone := &gitRepo{t: t, dir: t.TempDir()}
	clone.git("clone", "-q", super.dir, clone.dir)
	if entries, _ := os.ReadDir(filepath.Join(clone.dir, "third_party", "calc")); len(entries) != 0 {
		t.Fatalf("the plain clone has its submodule checked out: %v", entries)
	}
	for name, dir := range map[string]string{"initialized checkout": super.dir, "plain clone": clone.dir} {
		t.Run(name, func(t *testing.T) {
			rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: dir, Base: "HEAD~1", Head: "HEAD",
				Runner: &host.Runner{Extra: []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}}, NoEvidence: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != verify.Verified {
				t.Fatalf("verdict %s, want verified: reasons %+v tests %+v tamper %+v", rep.Verdict, rep.Reasons, rep.Tests, rep.Tamper)
			}
			credited := false
			for _, tr := range rep.Credited() {
				credited = credited || tr.Name == "TestDistanceReversed"
			}
			if !credited {
				t.Fatalf("TestDistanceReversed not credited: %+v", rep.Tests)
			}
		})
	}
}
