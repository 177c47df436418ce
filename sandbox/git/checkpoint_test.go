package git

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linkedFixture is a repository with a base commit and a linked worktree
// of it on branch "task", opened the hostile way.
func linkedFixture(t *testing.T) (f *fixture, wt *Repo, base string) {
	t.Helper()
	f = newFixture(t)
	f.write("keep.txt", "kept\n")
	f.write("gone.txt", "deleted by the agent\n")
	f.write("t.log", "tracked, though ignored later\n")
	f.writeMode("run.sh", "#!/bin/sh\n", 0o755)
	base = f.commit("base")
	dir := filepath.Join(t.TempDir(), "wt")
	ctx := context.Background()
	if err := f.open().WorktreeAdd(ctx, dir, "task", base); err != nil {
		t.Fatal(err)
	}
	wt, err := f.open().LinkedWorktree(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return f, wt, base
}

func writeIn(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotTreeMatchesGitAddAll: on a benign tree, the checkpoint tree
// is exactly what `git add --all` + `write-tree` makes: ignore rules
// (negation, directory-only, anchored, nested .gitignore, a tracked file
// that is ignored), deletions, links and executable bits.
func TestSnapshotTreeMatchesGitAddAll(t *testing.T) {
	ctx := context.Background()
	_, wt, base := linkedFixture(t)
	d := wt.Dir
	writeIn(t, d, ".gitignore", "*.log\nbuild/\n!keep.log\n/root-only.txt\n")
	writeIn(t, d, "sub/.gitignore", "*.tmp\n")
	for _, p := range []string{"a.log", "keep.log", "build/x.o", "build/deep/y.o", "src/build.go", "root-only.txt",
		"sub/root-only.txt", "sub/x.tmp", "sub/ok.go", "deep/a/b/c.txt", "name with spaces.txt", ":(glob)magic.txt"} {
		writeIn(t, d, p, "content of "+p+"\n")
	}
	writeIn(t, d, "t.log", "tracked and changed\n")
	os.Remove(filepath.Join(d, "gone.txt"))
	os.Symlink("keep.txt", filepath.Join(d, "link"))
	os.Chmod(filepath.Join(d, "keep.txt"), 0o755)

	tree, skipped, err := wt.SnapshotTree(ctx, base, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %+v on a benign tree", skipped)
	}
	// Plain git over the same tree (benign, so safe to run here).
	plain := &fixture{t: t, dir: d}
	plain.git("add", "--all")
	want := strings.TrimSpace(plain.git("write-tree"))
	if tree != want {
		t.Errorf("checkpoint tree %s, git add --all %s:\nours:\n%s\ngit's:\n%s", tree, want,
			plain.git("ls-tree", "-r", tree), plain.git("ls-tree", "-r", want))
	}
	// The stat cache: a second snapshot of the unchanged tree is the same.
	again, _, err := wt.SnapshotTree(ctx, base, Limits{})
	if err != nil || again != tree {
		t.Errorf("second snapshot %s, %v; want %s", again, err, tree)
	}
	// A change the cache must not hide: same size, new content.
	writeIn(t, d, "sub/ok.go", "CONTENT OF sub/ok.go\n")
	later := time.Now().Add(5 * time.Second)
	os.Chtimes(filepath.Join(d, "sub/ok.go"), later, later)
	third, _, err := wt.SnapshotTree(ctx, base, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := wt.ShowFile(ctx, third, "sub/ok.go"); string(b) != "CONTENT OF sub/ok.go\n" {
		t.Errorf("after a same-size edit the checkpoint holds %q", b)
	}
}

// TestSnapshotTreeHostile: a nested repository's filter does not run, a
// fifo named .gitignore does not stall the snapshot, a 4 GiB sparse file is
// not read, and each is reported.
func TestSnapshotTreeHostile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	markers := t.TempDir()
	_, wt, base := linkedFixture(t)
	d := wt.Dir
	nested := &fixture{t: t, dir: filepath.Join(d, "sub")}
	os.MkdirAll(nested.dir, 0o755)
	nested.git("init", "-q")
	nested.write("f.txt", "one\n")
	nested.write(".gitattributes", "* filter=evil\n")
	nested.commit("nested")
	nested.git("config", "filter.evil.clean", "touch '"+filepath.Join(markers, "filter")+"'; cat")
	nested.write("f.txt", "two\n")
	if err := mkfifo(filepath.Join(d, "gen", ".gitignore")); err != nil {
		t.Skip("no fifos:", err)
	}
	f, _ := os.Create(filepath.Join(d, "huge.bin"))
	f.Truncate(4 << 30)
	f.Close()
	writeIn(t, d, "ok.txt", "ok\n")

	start := time.Now()
	tree, skipped, err := wt.SnapshotTree(ctx, base, Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var got []string
	for _, s := range skipped {
		got = append(got, s.Reason+" "+s.Path)
	}
	if want := "[special_file gen/.gitignore file_too_large huge.bin nested_repository sub]"; strings.Join(got, " ") != strings.Trim(want, "[]") {
		t.Errorf("skipped %v, want %s", got, want)
	}
	if b, err := wt.ShowFile(ctx, tree, "ok.txt"); err != nil || string(b) != "ok\n" {
		t.Errorf("ok.txt in the checkpoint: %q, %v", b, err)
	}
	if m := markersIn(t, markers); len(m) > 0 {
		t.Errorf("the nested repository's filter ran: %v", m)
	}
	t.Logf("snapshot with a fifo .gitignore, a 4 GiB sparse file and a nested repository: %s", took.Round(time.Millisecond))
}

// TestLinkedWorktreeIgnoresItsDotGit: the worktree's .git pointed at a
// repository of the agent's changes nothing: bcode finds the worktree's
// git directory in the repository's own records.
func TestLinkedWorktreeIgnoresItsDotGit(t *testing.T) {
	ctx := context.Background()
	f, wt, _ := linkedFixture(t)
	evil := &fixture{t: t, dir: filepath.Join(wt.Dir, "evil")}
	os.MkdirAll(evil.dir, 0o755)
	evil.git("init", "-q")
	os.WriteFile(filepath.Join(wt.Dir, ".git"), []byte("gitdir: evil/.git\n"), 0o644)

	again, err := f.open().LinkedWorktree(ctx, wt.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.GitDir != wt.GitDir || !strings.HasPrefix(again.GitDir, filepath.Join(f.dir, ".git", "worktrees")) {
		t.Errorf("git dir %s, want %s", again.GitDir, wt.GitDir)
	}
	if head, err := again.LinkedHead(ctx); err != nil || head != "refs/heads/task" {
		t.Errorf("HEAD %q, %v", head, err)
	}
	// Moved and removed without git reading that .git.
	to := filepath.Join(filepath.Dir(wt.Dir), "moved")
	if err := f.open().MoveWorktree(ctx, wt.Dir, to); err != nil {
		t.Fatal(err)
	}
	if _, err := f.open().LinkedWorktree(ctx, to); err != nil {
		t.Fatalf("after the move: %v", err)
	}
	os.Chmod(filepath.Join(to, "evil"), 0o000)
	if err := f.open().RemoveLinkedWorktree(ctx, to); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(to); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", to, err)
	}
	if strings.Contains(f.git("worktree", "list"), "moved") {
		t.Errorf("git still lists the removed worktree:\n%s", f.git("worktree", "list"))
	}
}
