// Package landingtest is the attack suite of the landing boundary: what
// accepting an agent's commit puts on the user's branch, judged the way git
// and the kernel will act on it (verify/tamper.Landing). Every case is a
// real git repository built in a temporary directory, a base commit (the
// user's branch) and an agent commit on top; an attack is armed against
// plain git and the kernel where this machine can show it, and Run checks
// that the implementation under test reports it. The clean cases guard
// against false positives: they must land with no finding at all.
//
// Any implementation of the boundary runs the same suite: Run with a Judge
// (verify/tamper's own test does), and engine/task runs every case through
// Accept, fast-forward and cherry-pick.
package landingtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
)

// File is one path of a commit.
type File struct {
	Path string
	// Mode is "100644" (the default), "100755", "120000" (Content is the
	// link's target) or "160000" (Content is the submodule's commit id;
	// "" gives a fixed one).
	Mode    string
	Content string
	// Delete removes the path (a file, or every file below a directory).
	Delete bool
}

// Modes of File.
const (
	Exec    = "100755"
	Link    = "120000"
	Gitlink = "160000"
)

// fixedCommit is a submodule commit id no repository needs to hold.
const fixedCommit = "0123456789abcdef0123456789abcdef01234567"

// Repo is one case built as a real repository.
type Repo struct {
	Dir  string
	Base string // the base commit: the user's branch before landing
	Head string // the agent's commit, on top of Base
}

// Build makes a repository in a temporary directory with c.Base committed
// on main and c.Agent committed on top of it (main is left at Base; the
// agent's commit is the branch "agent"). Commits are made with plumbing,
// so no file is ever written to a working tree.
func Build(t testing.TB, c Case) Repo {
	t.Helper()
	r := testrepo.New(t)
	base := Commit(t, r.Dir, "", append([]File{{Path: "README.md", Content: "# project\n"}}, c.Base...))
	r.Git("update-ref", "refs/heads/main", base)
	head := Commit(t, r.Dir, base, c.Agent)
	r.Git("update-ref", "refs/heads/agent", head)
	return Repo{Dir: r.Dir, Base: base, Head: head}
}

// Commit makes a commit in the repository at dir whose tree is parent's
// (none when "") with files applied, through a private index: hash-object
// and update-index --add --replace (a link can replace a directory), then
// write-tree and commit-tree. It returns the commit id.
func Commit(t testing.TB, dir, parent string, files []File) string {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := testrepo.Command(dir, args...)
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+index)
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		out, err := cmd.Output()
		if err != nil {
			var msg string
			if ee, ok := err.(interface{ Stderr() []byte }); ok {
				msg = string(ee.Stderr())
			}
			t.Fatalf("git %s: %v %s", strings.Join(args, " "), err, msg)
		}
		return strings.TrimSpace(string(out))
	}
	if parent != "" {
		git("", "read-tree", parent)
	}
	for _, f := range files {
		if f.Delete {
			for _, p := range strings.Split(git("", "ls-files", "-z", "--", f.Path), "\x00") {
				if p != "" {
					git("", "update-index", "--force-remove", "--", p)
				}
			}
			continue
		}
		mode, id := f.Mode, ""
		switch mode {
		case "":
			mode = "100644"
		case Gitlink:
			if id = f.Content; id == "" {
				id = fixedCommit
			}
		}
		if id == "" {
			id = hashObject(t, dir, f.Content)
		}
		git("", "update-index", "--add", "--replace", "--cacheinfo", mode+","+id+","+f.Path)
	}
	tree := git("", "write-tree")
	args := []string{"commit-tree", tree, "-m", "commit"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return git("", args...)
}

// hashObject writes content as a blob (through a file, so any byte and any
// length goes).
func hashObject(t testing.TB, dir, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := testrepo.Command(dir, "hash-object", "-w", "--no-filters", "--", f).Output()
	if err != nil {
		t.Fatalf("hash-object: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Checkout is a checkout of rev made by plain git (the user's, unhardened,
// with the machine's configuration shut out) in a fresh directory: what
// the kernel and git see after landing.
func Checkout(t testing.TB, dir, rev string) string {
	t.Helper()
	co := filepath.Join(t.TempDir(), "checkout")
	if out, err := testrepo.Command(filepath.Dir(co), "clone", "-q", "--no-checkout", dir, co).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	if out, err := testrepo.Command(co, "checkout", "-q", "--detach", rev).CombinedOutput(); err != nil {
		t.Logf("checkout of %s: %v\n%s", rev, err, out) // some attacks make git refuse a path
	}
	return co
}
