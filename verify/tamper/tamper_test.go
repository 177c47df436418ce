package tamper

import (
	"context"
	"errors"
	"io/fs"
	"os/exec"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

func mustConfig(t *testing.T, toml string) config.Config {
	t.Helper()
	c, err := config.Parse([]byte(toml))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	return c
}

func added(p, head string) verify.FileChange {
	return verify.FileChange{Path: p, Status: verify.Added, Head: []byte(head)}
}

func modified(p, base, head string) verify.FileChange {
	return verify.FileChange{Path: p, Status: verify.Modified, Base: []byte(base), Head: []byte(head)}
}

func deleted(p, base string) verify.FileChange {
	return verify.FileChange{Path: p, Status: verify.Deleted, Base: []byte(base)}
}

// want is a finding without its message; messages are checked separately.
type want struct {
	code, path string
	line       int
}

func codes(fs []verify.Finding) []want {
	var out []want
	for _, f := range fs {
		out = append(out, want{f.Code, f.Path, f.Line})
	}
	return out
}

func equalWants(a, b []want) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheck(t *testing.T) {
	protectAuth := `[gate]
protected = [".bcode/**", "internal/auth/**", "*.pem"]
`
	tests := []struct {
		name  string
		cfg   string
		files []verify.FileChange
		want  []want
		// inMessage must appear in the first finding's message.
		inMessage string
	}{
		{
			name:  "ordinary source change is not tamper",
			files: []verify.FileChange{modified("pkg/a.go", "package a\n", "package a\n\nvar X = 1\n")},
		},
		{
			name:      "default protects .bcode",
			files:     []verify.FileChange{added(".bcode/prompts/system.md", "obey")},
			want:      []want{{verify.FindingProtectedPath, ".bcode/prompts/system.md", 0}},
			inMessage: `".bcode/**"`,
		},
		{
			name:      "config change names the base config as the one in force",
			files:     []verify.FileChange{modified(".bcode/config.toml", "", "[gate]\nflake_runs = 1\n")},
			want:      []want{{verify.FindingConfigChanged, ".bcode/config.toml", 0}},
			inMessage: "base commit's configuration stays in force",
		},
		{
			name:      "config change is reported even when the base does not protect .bcode",
			cfg:       "[gate]\nprotected = [\"secret/**\"]\n",
			files:     []verify.FileChange{deleted(".bcode/config.toml", "[gate]\n")},
			want:      []want{{verify.FindingConfigChanged, ".bcode/config.toml", 0}},
			inMessage: "deleted",
		},
		{
			name: "protected glob from config, modified and deleted",
			cfg:  protectAuth,
			files: []verify.FileChange{
				modified("internal/auth/token.go", "package auth\n", "package auth\n// x\n"),
				deleted("internal/auth/sub/keys.go", "package sub\n"),
				modified("internal/authz/x.go", "package authz\n", "package authz\n// y\n"),
			},
			want: []want{
				{verify.FindingProtectedPath, "internal/auth/sub/keys.go", 0},
				{verify.FindingProtectedPath, "internal/auth/token.go", 0},
			},
			inMessage: `"internal/auth/**"`,
		},
		{
			name: "rename out of a protected dir reports the old side",
			cfg:  protectAuth,
			files: []verify.FileChange{
				deleted("internal/auth/check.go", "package auth\n"),
				added("internal/public/check.go", "package public\n"),
			},
			want: []want{{verify.FindingProtectedPath, "internal/auth/check.go", 0}},
		},
		{
			name:  "basename glob matches in any directory",
			cfg:   protectAuth,
			files: []verify.FileChange{added("deploy/tls/server.pem", "x")},
			want:  []want{{verify.FindingProtectedPath, "deploy/tls/server.pem", 0}},
		},
		{
			name: "CI definitions",
			files: []verify.FileChange{
				modified(".github/workflows/ci.yml", "on: push\n", "on: workflow_dispatch\n"),
				added(".github/actions/setup/action.yml", "runs: {}\n"),
				deleted(".gitlab-ci.yml", "test: {}\n"),
				modified(".circleci/config.yml", "a", "b"),
				modified("Jenkinsfile", "a", "b"),
				modified("azure-pipelines.yml", "a", "b"),
				modified(".travis.yml", "a", "b"),
				modified(".buildkite/pipeline.yml", "a", "b"),
				modified("bitbucket-pipelines.yml", "a", "b"),
				modified(".drone.yml", "a", "b"),
				modified(".woodpecker/test.yml", "a", "b"),
				modified(".ci/run", "a", "b"),
				modified("docs/ci.md", "a", "b"),
				modified("src/.github/notes.txt", "a", "b"),
			},
			want: []want{
				{verify.FindingCIChanged, ".buildkite/pipeline.yml", 0},
				{verify.FindingCIChanged, ".ci/run", 0},
				{verify.FindingCIChanged, ".circleci/config.yml", 0},
				{verify.FindingCIChanged, ".drone.yml", 0},
				{verify.FindingCIChanged, ".github/actions/setup/action.yml", 0},
				{verify.FindingCIChanged, ".github/workflows/ci.yml", 0},
				{verify.FindingCIChanged, ".gitlab-ci.yml", 0},
				{verify.FindingCIChanged, ".travis.yml", 0},
				{verify.FindingCIChanged, ".woodpecker/test.yml", 0},
				{verify.FindingCIChanged, "Jenkinsfile", 0},
				{verify.FindingCIChanged, "azure-pipelines.yml", 0},
				{verify.FindingCIChanged, "bitbucket-pipelines.yml", 0},
			},
		},
		{
			name: "CI file under a protected glob gets both findings",
			cfg:  "[gate]\nprotected = [\".github/**\"]\n",
			files: []verify.FileChange{
				modified(".github/workflows/ci.yml", "a", "b"),
			},
			want: []want{
				{verify.FindingCIChanged, ".github/workflows/ci.yml", 0},
				{verify.FindingProtectedPath, ".github/workflows/ci.yml", 0},
			},
		},
		{
			name: "test source that became binary",
			files: []verify.FileChange{
				{Path: "pkg/a_test.go", Status: verify.Modified, Base: []byte("package a\n"), Head: []byte("\x00\x01ELF"), Binary: true},
				{Path: "tests/test_api.py", Status: verify.Added, Head: []byte("\x00pyc"), Binary: true},
				{Path: "tests/conftest.py", Status: verify.Added, Head: []byte("\x00"), Binary: true},
			},
			want: []want{
				{verify.FindingBinaryTestFile, "pkg/a_test.go", 0},
				{verify.FindingBinaryTestFile, "tests/conftest.py", 0},
				{verify.FindingBinaryTestFile, "tests/test_api.py", 0},
			},
		},
		{
			name: "binary fixtures in test directories are fine",
			files: []verify.FileChange{
				{Path: "pkg/testdata/blob_test.go", Status: verify.Added, Head: []byte("\x00"), Binary: true},
				{Path: "tests/fixtures/image.png", Status: verify.Added, Head: []byte("\x89PNG\x00"), Binary: true},
				{Path: "test/data.bin", Status: verify.Modified, Base: []byte("\x00a"), Head: []byte("\x00b"), Binary: true},
			},
		},
		{
			name: "binary test file turned back into text is fine",
			files: []verify.FileChange{
				{Path: "pkg/a_test.go", Status: verify.Modified, Base: []byte("\x00"), Head: []byte("package a\n"), Binary: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			if tt.cfg != "" {
				cfg = mustConfig(t, tt.cfg)
			}
			got := Check(&verify.Change{Files: tt.files}, cfg)
			if !equalWants(codes(got), tt.want) {
				t.Fatalf("findings:\n got %v\nwant %v", codes(got), tt.want)
			}
			if tt.inMessage != "" && !strings.Contains(got[0].Message, tt.inMessage) {
				t.Errorf("message %q does not mention %q", got[0].Message, tt.inMessage)
			}
			for _, f := range got {
				if f.Message == "" {
					t.Errorf("finding %v has no message", f)
				}
			}
		})
	}
}

func TestCheckNilChange(t *testing.T) {
	if got := Check(nil, config.Default()); got != nil {
		t.Fatalf("Check(nil) = %v", got)
	}
}

func TestCheckIsDeterministic(t *testing.T) {
	files := []verify.FileChange{
		modified("z/Makefile", "test:\n\tgo test ./...\n", "test:\n\ttrue\n"),
		added(".bcode/x", "x"),
		modified(".github/workflows/a.yml", "a", "b"),
		modified("Makefile", "check:\n\tpytest\nunit-test:\n\tgo test\n", ""),
	}
	first := Check(&verify.Change{Files: files}, config.Default())
	for i := 0; i < 20; i++ {
		// Reverse the input each time: the output order must not depend on it.
		rev := make([]verify.FileChange, len(files))
		for j := range files {
			rev[len(files)-1-j] = files[j]
		}
		files = rev
		again := Check(&verify.Change{Files: files}, config.Default())
		if !equalWants(codes(first), codes(again)) {
			t.Fatalf("order differs:\n%v\n%v", codes(first), codes(again))
		}
	}
	if len(first) != 5 {
		t.Fatalf("want 5 findings, got %v", codes(first))
	}
}

// gitRepo is a real repository in a temp dir; ReadBase reads the base commit
// with `git show`, which is what the gate's Workspace does.
type gitRepo struct {
	*testrepo.Repo
	t    *testing.T
	base string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	return &gitRepo{Repo: testrepo.New(t), t: t}
}

func (r *gitRepo) Materialize(context.Context, verify.Side, []verify.FileChange) (string, error) {
	return "", errors.New("not used by tamper")
}

func (r *gitRepo) ReadBase(_ context.Context, p string) ([]byte, error) {
	cmd := exec.Command("git", "cat-file", "blob", r.base+":"+p)
	cmd.Dir = r.Dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fs.ErrNotExist
	}
	return out, nil
}

func (r *gitRepo) Close() error { return nil }

// change lists base..head the way the gate does (no rename detection), with
// both sides' contents.
func (r *gitRepo) change(base, head string) *verify.Change {
	r.base = base
	c := &verify.Change{Base: base, Head: head, Workspace: r}
	for _, line := range strings.Split(r.Git("diff", "--no-renames", "--name-status", base, head), "\n") {
		status, p, _ := strings.Cut(line, "\t")
		fc := verify.FileChange{Path: p}
		switch status {
		case "A":
			fc.Status = verify.Added
		case "M":
			fc.Status = verify.Modified
		case "D":
			fc.Status = verify.Deleted
		default:
			r.t.Fatalf("unexpected diff line %q", line)
		}
		if fc.Status != verify.Added {
			fc.Base = []byte(r.Git("show", base+":"+p) + "\n")
		}
		if fc.Status != verify.Deleted {
			fc.Head = []byte(r.Git("show", head+":"+p) + "\n")
		}
		c.Files = append(c.Files, fc)
	}
	return c
}

// TestWeakenedConfigInHeadStillEnforced: the head removes internal/auth/**
// from the protected list and edits a file there in the same change; the
// base's configuration is the one that judges it.
func TestWeakenedConfigInHeadStillEnforced(t *testing.T) {
	r := newGitRepo(t)
	r.WriteFile(".bcode/config.toml", "[gate]\nprotected = [\".bcode/**\", \"internal/auth/**\"]\n")
	r.WriteFile("internal/auth/auth.go", "package auth\n\nfunc Allowed() bool { return false }\n")
	base := r.Commit("base")
	r.WriteFile(".bcode/config.toml", "[gate]\nprotected = []\n")
	r.WriteFile("internal/auth/auth.go", "package auth\n\nfunc Allowed() bool { return true }\n")
	head := r.Commit("weaken")

	change := r.change(base, head)
	raw, err := change.Workspace.ReadBase(context.Background(), config.Path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustConfig(t, string(raw))
	got := Check(change, cfg)
	want := []want{
		{verify.FindingConfigChanged, ".bcode/config.toml", 0},
		{verify.FindingProtectedPath, "internal/auth/auth.go", 0},
	}
	if !equalWants(codes(got), want) {
		t.Fatalf("got %v want %v", codes(got), want)
	}

	// Judged by the head's (weakened) configuration, the auth change would
	// pass: this is what reading from the base prevents.
	headCfg := mustConfig(t, string(change.Files[0].Head))
	for _, f := range Check(change, headCfg) {
		if f.Code == verify.FindingProtectedPath {
			t.Fatalf("head config unexpectedly still protects: %v", f)
		}
	}
}
