package check_test

import (
	"context"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// ciMoveRepo is a person's release as two real commits: a fix of Sign for
// zero with the test that shows it, and CI moved from Travis to a GitHub
// workflow (.travis.yml deleted, .github/workflows/test.yml added). config
// is the base's .bcode/config.toml ("" none).
func ciMoveRepo(t *testing.T, config string) *gitRepo {
	r := newGitRepo(t)
	base := map[string]string{
		"go.mod":       "module example.com/cimove\n\ngo 1.22\n",
		".travis.yml":  "language: go\nscript: go test ./...\n",
		"sign.go":      "package cimove\n\nfunc Sign(x int) int {\n\tif x < 0 {\n\t\treturn -1\n\t}\n\treturn 1\n}\n",
		"sign_test.go": "package cimove\n\nimport \"testing\"\n\nfunc TestSignNonZero(t *testing.T) {\n\tif Sign(-5) != -1 || Sign(7) != 1 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
	}
	if config != "" {
		base[".bcode/config.toml"] = config
	}
	r.write(base)
	r.commit("base")
	r.git("rm", "-q", ".travis.yml")
	r.write(map[string]string{
		".github/workflows/test.yml": "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: go test ./...\n",
		"sign.go":                    "package cimove\n\nfunc Sign(x int) int {\n\tswitch {\n\tcase x < 0:\n\t\treturn -1\n\tcase x > 0:\n\t\treturn 1\n\t}\n\treturn 0\n}\n",
		"sign_test.go":               "package cimove\n\nimport \"testing\"\n\nfunc TestSignNonZero(t *testing.T) {\n\tif Sign(-5) != -1 || Sign(7) != 1 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n\nfunc TestSignZero(t *testing.T) {\n\tif Sign(0) != 0 {\n\t\tt.Fatal(Sign(0))\n\t}\n}\n",
	})
	r.commit("release: fix Sign(0), move CI to GitHub Actions")
	return r
}

// TestCIMoveIsAFindingForAPersonAndBlocksATask: the same CI move is, by
// default, a finding beside the tests' verdict in a person's check and
// tampering in an agent's task; the base's gate.infrastructure_changes
// overrides either. The test table is in the report every time.
func TestCIMoveIsAFindingForAPersonAndBlocksATask(t *testing.T) {
	for _, tc := range []struct {
		name, config, task string
		want               verify.Verdict
	}{
		{"person", "", "", verify.Verified},
		{"task", "", "task-1", verify.Tampered},
		{"person, base says block", "[gate]\ninfrastructure_changes = \"block\"\n", "", verify.Tampered},
		{"task, base says findings", "[gate]\ninfrastructure_changes = \"findings\"\n", "task-1", verify.Verified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ciMoveRepo(t, tc.config)
			rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD", TaskID: tc.task,
				Runner: &host.Runner{Extra: []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}}, NoEvidence: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s\n%s", rep.Verdict, tc.want, describe(rep))
			}
			if len(rep.Credited()) != 1 || rep.Credited()[0].Name != "TestSignZero" {
				t.Errorf("credited %+v, want TestSignZero: the test table is there whatever the verdict", rep.Credited())
			}
			ci := map[string]bool{}
			blocking := tc.want == verify.Tampered
			where := rep.Infrastructure
			if blocking {
				where = rep.Tamper
			}
			for _, f := range where {
				if f.Code == verify.FindingCIChanged {
					ci[f.Path] = true
				}
			}
			if !ci[".travis.yml"] || !ci[".github/workflows/test.yml"] {
				t.Errorf("ci_changed findings for both files in %s; tamper %v, infrastructure %v", map[bool]string{true: "tamper", false: "infrastructure"}[blocking], rep.Tamper, rep.Infrastructure)
			}
			if !blocking && len(rep.Tamper) != 0 {
				t.Errorf("a person's CI move left tamper findings %v", rep.Tamper)
			}
			if blocking && len(rep.Infrastructure) != 0 {
				t.Errorf("blocking CI findings also stand beside the verdict: %v", rep.Infrastructure)
			}
		})
	}
}
