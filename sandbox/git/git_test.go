package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenFindsTopLevelFromSubdirectory(t *testing.T) {
	f := newFixture(t)
	f.write("a/b/c.txt", "x\n")
	f.commit("init")
	r, err := Open(context.Background(), filepath.Join(f.dir, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != f.dir {
		t.Errorf("Dir = %q, want %q", r.Dir, f.dir)
	}
	if r.GitDir != filepath.Join(f.dir, ".git") {
		t.Errorf("GitDir = %q, want %q", r.GitDir, filepath.Join(f.dir, ".git"))
	}
}

func TestOpenRefusesWhatIsNotAWorkingTree(t *testing.T) {
	ctx := context.Background()
	plain := t.TempDir()
	_, err := Open(ctx, plain)
	if err == nil || !strings.Contains(err.Error(), "not a git repository: "+plain) || !strings.Contains(err.Error(), "--repo") {
		t.Errorf("plain directory: err = %v, want 'not a git repository: %s ... --repo'", err, plain)
	}
	_, err = Open(ctx, filepath.Join(plain, "missing"))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: err = %v", err)
	}

	f := newFixture(t)
	f.write("x", "x")
	f.commit("init")
	bare := t.TempDir()
	f.git("clone", "-q", "--bare", f.dir, bare)
	_, err = Open(ctx, bare)
	if err == nil || !strings.Contains(err.Error(), "bare repository") {
		t.Errorf("bare: err = %v, want a bare repository error", err)
	}
	_, err = Open(ctx, filepath.Join(f.dir, ".git"))
	if err == nil || !strings.Contains(err.Error(), "not a working tree") {
		t.Errorf("inside .git: err = %v, want 'not a working tree'", err)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("x", "1")
	first := f.commit("one")
	f.write("x", "2")
	second := f.commit("two")
	f.git("tag", "v1", first)
	r := f.open()

	for rev, want := range map[string]string{"HEAD": second, "HEAD~1": first, "v1": first, "main": second, first[:10]: first} {
		got, err := r.Resolve(ctx, rev)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", rev, got, err, want)
		}
	}
	for _, bad := range []string{"foo", "HEAD~5", "-n", "--all", "", "a\nb"} {
		_, err := r.Resolve(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), "bad revision") && bad != "" {
			t.Errorf("Resolve(%q): err = %v, want a bad revision error", bad, err)
		}
	}
	_, err := r.Resolve(ctx, "foo")
	if !strings.HasPrefix(err.Error(), `bad revision "foo": `) {
		t.Errorf("error %q does not start with the revision", err)
	}
	// A tree is not a commit.
	tree := strings.TrimSpace(f.git("rev-parse", "HEAD^{tree}"))
	if _, err := r.Resolve(ctx, tree); err == nil {
		t.Errorf("Resolve(tree) succeeded")
	}
}

func TestDefaultBase(t *testing.T) {
	ctx := context.Background()

	t.Run("main branch", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		fork := f.commit("one")
		f.git("checkout", "-q", "-b", "feature")
		f.write("x", "2")
		f.commit("feature work")
		f.git("checkout", "-q", "main")
		f.write("y", "later on main")
		f.commit("main moves on")
		f.git("checkout", "-q", "feature")
		got, err := f.open().DefaultBase(ctx)
		if err != nil || got != fork {
			t.Errorf("DefaultBase = %q, %v; want the fork point %q", got, err, fork)
		}
	})

	t.Run("upstream wins over main", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		f.commit("one")
		f.git("checkout", "-q", "-b", "release")
		f.write("r", "release")
		rel := f.commit("release")
		f.git("checkout", "-q", "-b", "feature")
		f.write("x", "2")
		f.commit("feature")
		f.git("branch", "-q", "--set-upstream-to=release")
		got, err := f.open().DefaultBase(ctx)
		if err != nil || got != rel {
			t.Errorf("DefaultBase = %q, %v; want the upstream %q", got, err, rel)
		}
	})

	t.Run("origin/HEAD", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		one := f.commit("one")
		f.write("x", "2")
		f.commit("two")
		f.git("branch", "-q", "-m", "main", "work")
		f.git("update-ref", "refs/remotes/origin/dev", one)
		f.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/dev")
		got, err := f.open().DefaultBase(ctx)
		if err != nil || got != one {
			t.Errorf("DefaultBase = %q, %v; want origin/HEAD %q", got, err, one)
		}
	})

	t.Run("master", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		one := f.commit("one")
		f.git("branch", "-q", "-m", "main", "master")
		f.git("checkout", "-q", "-b", "topic")
		f.write("x", "2")
		f.commit("two")
		got, err := f.open().DefaultBase(ctx)
		if err != nil || got != one {
			t.Errorf("DefaultBase = %q, %v; want master %q", got, err, one)
		}
	})

	t.Run("on main itself: HEAD", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		head := f.commit("one")
		got, err := f.open().DefaultBase(ctx)
		if err != nil || got != head {
			t.Errorf("DefaultBase = %q, %v; want HEAD %q", got, err, head)
		}
	})

	t.Run("no candidate", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		f.commit("one")
		f.git("branch", "-q", "-m", "main", "trunk")
		_, err := f.open().DefaultBase(ctx)
		if !errors.Is(err, ErrNoBase) || !strings.Contains(err.Error(), "pass --base REV") {
			t.Errorf("err = %v, want ErrNoBase", err)
		}
	})

	t.Run("unrelated main is skipped", func(t *testing.T) {
		f := newFixture(t)
		f.write("x", "1")
		f.commit("one")
		f.git("checkout", "-q", "--orphan", "other")
		f.write("x", "2")
		f.commit("unrelated")
		_, err := f.open().DefaultBase(ctx)
		if !errors.Is(err, ErrNoBase) {
			t.Errorf("err = %v, want ErrNoBase (no shared history)", err)
		}
	})

	t.Run("no commits", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.open().DefaultBase(ctx)
		if !errors.Is(err, ErrNoBase) || !strings.Contains(err.Error(), "no commit") {
			t.Errorf("err = %v, want a no-commit ErrNoBase", err)
		}
	})
}

func TestGitCarriesStderr(t *testing.T) {
	f := newFixture(t)
	f.write("x", "1")
	f.commit("one")
	r := f.open()
	out, err := r.Git(context.Background(), "log", "--format=%s")
	if err != nil || strings.TrimSpace(string(out)) != "one" {
		t.Fatalf("log = %q, %v", out, err)
	}
	// Porcelain diff still works with diff.external emptied.
	f.write("x", "2")
	out, err = r.Git(context.Background(), "diff")
	if err != nil || !strings.Contains(string(out), "+2") {
		t.Errorf("diff = %q, %v", out, err)
	}
	_, err = r.Git(context.Background(), "cat-file", "-p", "nosuchobject")
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode == 0 || !strings.Contains(err.Error(), "nosuchobject") {
		t.Errorf("err = %v, want a *Error carrying git's message", err)
	}
}

func TestEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_INDEX_FILE", "/nonexistent/index")
	t.Setenv("GIT_EXTERNAL_DIFF", "false")
	t.Setenv("BCODE_SECRET_TOKEN", "hunter2")
	f := newFixture(t)
	f.write("x", "1")
	f.commit("one")
	r := f.open() // would fail if GIT_DIR leaked through
	// An alias run by git's shell prints the environment git passes on.
	out, err := r.Git(context.Background(), "-c", "alias.showenv=!env", "showenv")
	if err != nil {
		t.Fatal(err)
	}
	env := string(out)
	for _, leak := range []string{"hunter2", "GIT_DIR=/nonexistent", "GIT_INDEX_FILE=/nonexistent", "GIT_EXTERNAL_DIFF"} {
		if strings.Contains(env, leak) {
			t.Errorf("caller's environment reached git: %s", leak)
		}
	}
	for _, want := range []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat", "GIT_EDITOR=true"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("git's environment lacks %s:\n%s", want, env)
		}
	}
	home, _ := emptyHome()
	if entries, err := os.ReadDir(home); err != nil || len(entries) != 0 {
		t.Errorf("git's HOME %s is not an empty directory: %v %v", home, entries, err)
	}
}
