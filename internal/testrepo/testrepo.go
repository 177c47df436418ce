// Package testrepo builds the real git repositories bcode's tests run
// against: files from a txtar archive or a map, committed by plain git that
// reads none of the machine's configuration (no global or system config, no
// GIT_* variables from the environment, no signing, no hooks), so a test
// behaves the same on every machine.
package testrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/internal/testenv"
)

// Repo is a repository in a directory of the test's own.
type Repo struct {
	t   testing.TB
	Dir string
}

// New makes an empty repository on branch main in a fresh temporary
// directory; it skips t (fails under BCODE_REQUIRE_ALL=1) without git.
func New(t testing.TB) *Repo {
	t.Helper()
	return Init(t, t.TempDir())
}

// Init makes an empty repository on branch main in dir, creating it.
func Init(t testing.TB, dir string) *Repo {
	t.Helper()
	testenv.Git(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Repo{t: t, Dir: dir}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Open is a Repo for the existing repository in dir.
func Open(t testing.TB, dir string) *Repo {
	t.Helper()
	testenv.Git(t)
	return &Repo{t: t, Dir: dir}
}

// FromTxtar makes a repository whose first commit on main ("base") holds
// the archive's files.
func FromTxtar(t testing.TB, archive string) *Repo {
	t.Helper()
	r := New(t)
	r.WriteTxtar(archive)
	r.Commit("base")
	return r
}

// FromFiles makes a repository whose first commit on main ("base") holds
// files (slash path → content).
func FromFiles(t testing.TB, files map[string]string) *Repo {
	t.Helper()
	r := New(t)
	r.Write(files)
	r.Commit("base")
	return r
}

// Git runs git in the repository and returns its output with surrounding
// space trimmed; an error fails the test with git's output.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	out, err := r.GitErr(args...)
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// GitErr is Git for a command that may fail; it returns the combined
// output untrimmed.
func (r *Repo) GitErr(args ...string) (string, error) {
	cmd := Command(r.Dir, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Command is plain git in dir with the machine's configuration shut out
// and a fixed identity, for a caller that wants the *exec.Cmd.
func Command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false",
		"-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null",
		"-c", "gc.auto=0", "-c", "maintenance.auto=false",
	}, args...)...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	return cmd
}

// Write writes files (slash path → content) into the working tree.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		r.WriteFile(name, content)
	}
}

// WriteFile writes one file (slash path) into the working tree.
func (r *Repo) WriteFile(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.Dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// WriteTxtar writes the archive's files into the working tree.
func (r *Repo) WriteTxtar(archive string) {
	r.t.Helper()
	for _, f := range txtar.Parse([]byte(archive)).Files {
		r.WriteFile(f.Name, string(f.Data))
	}
}

// Commit stages everything and commits it; it returns the new commit.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}
