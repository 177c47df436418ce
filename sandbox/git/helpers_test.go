package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
)

// fixture is a scratch repository driven by plain git, the way a user's
// own git would touch it.
type fixture struct {
	t   testing.TB
	dir string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	testenv.Git(t)
	f := &fixture{t: t, dir: t.TempDir()}
	f.git("init", "-q", "-b", "main")
	return f
}

// git runs plain git in the fixture, isolated from the machine's config.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	out, err := f.gitErr(args...)
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (f *fixture) gitErr(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgSign=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
	cmd.Dir = f.dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+f.t.TempDir(),
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (f *fixture) write(path, content string) {
	f.t.Helper()
	f.writeMode(path, content, 0o644)
}

func (f *fixture) writeMode(path, content string, mode os.FileMode) {
	f.t.Helper()
	p := filepath.Join(f.dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) symlink(target, path string) {
	f.t.Helper()
	p := filepath.Join(f.dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) remove(path string) {
	f.t.Helper()
	if err := os.RemoveAll(filepath.Join(f.dir, path)); err != nil {
		f.t.Fatal(err)
	}
}

// commit stages everything and commits; it returns the commit id.
func (f *fixture) commit(msg string) string {
	f.t.Helper()
	f.git("add", "-A")
	f.git("commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(f.git("rev-parse", "HEAD"))
}

func (f *fixture) open() *Repo {
	f.t.Helper()
	r, err := Open(context.Background(), f.dir)
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	return r
}

// treeListing maps each path of a tree to "mode content" (a submodule's
// content is its commit id), read with plain git.
func (f *fixture) treeListing(tree string) map[string]string {
	f.t.Helper()
	out := f.git("ls-tree", "-r", "-z", tree)
	got := map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, path, _ := strings.Cut(rec, "\t")
		fs := strings.Fields(meta)
		if fs[1] == "commit" {
			got[path] = fs[0] + " " + fs[2]
			continue
		}
		got[path] = fs[0] + " " + f.git("cat-file", "blob", fs[2])
	}
	return got
}
