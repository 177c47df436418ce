package git

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// userState is what a snapshot must not change: the index file, HEAD and
// what status reports.
func userState(t *testing.T, f *fixture) string {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(f.dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return string(index) + "\x00" + f.git("rev-parse", "HEAD") + f.git("--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all")
}

func TestSnapshotWorktree(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write(".gitignore", "*.log\nbuild/\n")
	f.write("modified.txt", "old\n")
	f.write("same-size.txt", "aaaa\n")
	f.write("deleted.txt", "bye\n")
	f.write("script.sh", "#!/bin/sh\necho hi\n")
	f.writeMode("was-exec.sh", "#!/bin/sh\n", 0o755)
	f.write("dir/kept.txt", "kept\n")
	f.write("dir/gone/only.txt", "whole directory goes\n")
	f.symlink("modified.txt", "link")
	f.symlink("dir", "dirlink")
	f.write("typechange", "a file that becomes a link\n")
	f.write("sp ace/ünï côdé.txt", "unicode\n")
	f.commit("base")

	// Edit the working tree without staging anything.
	f.write("modified.txt", "new\n")
	f.write("same-size.txt", "bbbb\n") // same size, right after the commit
	f.remove("deleted.txt")
	if err := os.Chmod(filepath.Join(f.dir, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(f.dir, "was-exec.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.remove("dir/gone")
	f.write("untracked.txt", "fresh\n")
	f.write("newdir/deep/file.go", "package deep\n")
	f.write("debug.log", "ignored\n")
	f.write("build/out.bin", "ignored dir\n")
	f.symlink("../../outside", "newlink")
	f.remove("typechange")
	f.symlink("elsewhere", "typechange")
	f.write("sp ace/ünï côdé.txt", "unicode changed\n")
	// A nested repository is not part of the tree.
	nested := filepath.Join(f.dir, "vendored")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	(&fixture{t: t, dir: nested}).git("init", "-q")

	before := userState(t, f)
	r := f.open()
	tree, err := r.SnapshotWorktree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after := userState(t, f); after != before {
		t.Errorf("the snapshot changed the user's index, HEAD or status")
	}

	got := f.treeListing(tree)
	want := map[string]string{
		".gitignore":          "100644 *.log\nbuild/\n",
		"modified.txt":        "100644 new\n",
		"same-size.txt":       "100644 bbbb\n",
		"script.sh":           "100755 #!/bin/sh\necho hi\n",
		"was-exec.sh":         "100644 #!/bin/sh\n",
		"dir/kept.txt":        "100644 kept\n",
		"link":                "120000 modified.txt",
		"dirlink":             "120000 dir",
		"typechange":          "120000 elsewhere",
		"sp ace/ünï côdé.txt": "100644 unicode changed\n",
		"untracked.txt":       "100644 fresh\n",
		"newdir/deep/file.go": "100644 package deep\n",
		"newlink":             "120000 ../../outside",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot tree:\n got %q\nwant %q", got, want)
	}

	// The same working tree gives the same tree; a clean one gives HEAD's.
	again, err := r.SnapshotWorktree(ctx)
	if err != nil || again != tree {
		t.Errorf("second snapshot = %s, %v; want %s", again, err, tree)
	}
	f.remove("vendored")
	f.commit("everything")
	clean, err := r.SnapshotWorktree(ctx)
	head := strings.TrimSpace(f.git("rev-parse", "HEAD^{tree}"))
	if err != nil || clean != head {
		t.Errorf("snapshot of a clean tree = %s, %v; want HEAD's tree %s", clean, err, head)
	}
}

func TestSnapshotNeverReadsThroughALink(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("host secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.write("pkg/secret.txt", "in repo\n")
	f.write("pkg/other.txt", "other\n")
	f.commit("base")
	// The tracked directory becomes a link to a directory outside that has
	// a file of the same name.
	f.remove("pkg")
	f.symlink(outside, "pkg")

	tree, err := f.open().SnapshotWorktree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := f.treeListing(tree)
	want := map[string]string{"pkg": "120000 " + outside}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot = %q, want %q (the link, and the files below it gone)", got, want)
	}
}

func TestSnapshotStagedIntentToAddAndConflicts(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("c.txt", "base\n")
	f.write("staged.txt", "one\n")
	f.commit("base")
	f.git("checkout", "-q", "-b", "other")
	f.write("c.txt", "other\n")
	f.commit("other")
	f.git("checkout", "-q", "main")
	f.write("c.txt", "main\n")
	f.commit("main")
	if _, err := f.gitErr("merge", "-q", "other"); err == nil {
		t.Fatal("merge should conflict")
	}
	// Staged then edited again: the working tree's version counts.
	f.write("staged.txt", "two\n")
	f.git("add", "staged.txt")
	f.write("staged.txt", "three\n")
	f.write("ita.txt", "intent to add\n")
	f.git("add", "-N", "ita.txt")

	tree, err := f.open().SnapshotWorktree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := f.treeListing(tree)
	conflicted, _ := os.ReadFile(filepath.Join(f.dir, "c.txt"))
	want := map[string]string{
		"c.txt":      "100644 " + string(conflicted),
		"staged.txt": "100644 three\n",
		"ita.txt":    "100644 intent to add\n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot = %q\nwant %q", got, want)
	}
	if !bytes.Contains(conflicted, []byte("<<<<<<<")) {
		t.Errorf("fixture: c.txt has no conflict markers")
	}
}

func TestSnapshotEmptyRepository(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.open()
	tree, err := r.SnapshotWorktree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.treeListing(tree); len(got) != 0 {
		t.Errorf("empty repository snapshot = %q", got)
	}
	f.write("first.txt", "1\n")
	tree, err = r.SnapshotWorktree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.treeListing(tree); !reflect.DeepEqual(got, map[string]string{"first.txt": "100644 1\n"}) {
		t.Errorf("snapshot before the first commit = %q", got)
	}
}

func TestSnapshotKeepsSubmodulesAndRespectsFileModeOff(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.writeMode("run.sh", "#!/bin/sh\n", 0o755)
	f.write("a.txt", "a\n")
	f.commit("base")
	sub := strings.Repeat("1", 40)
	f.git("update-index", "--add", "--cacheinfo", "160000,"+sub+",sub")
	f.git("commit", "-q", "-m", "submodule (not checked out)")
	f.git("config", "core.fileMode", "false")
	if err := os.Chmod(filepath.Join(f.dir, "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.writeMode("a.txt", "changed\n", 0o755)

	tree, err := f.open().SnapshotWorktree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := f.treeListing(tree)
	want := map[string]string{"run.sh": "100755 #!/bin/sh\n", "a.txt": "100644 changed\n", "sub": "160000 " + sub}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot = %q\nwant %q", got, want)
	}
}

// A split index keeps most entries in .git/sharedindex.*; the snapshot's
// copy of the index must still find them.
func TestSnapshotSplitIndex(t *testing.T) {
	f := newFixture(t)
	f.git("config", "core.splitIndex", "true")
	f.write("a.txt", "a\n")
	f.write("b.txt", "b\n")
	f.commit("base")
	f.write("c.txt", "c\n")
	f.git("add", "c.txt")
	f.write("a.txt", "changed\n")
	if shared, _ := filepath.Glob(filepath.Join(f.dir, ".git", "sharedindex.*")); len(shared) == 0 {
		t.Fatal("fixture: no shared index was written")
	}
	tree, err := f.open().SnapshotWorktree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.txt": "100644 changed\n", "b.txt": "100644 b\n", "c.txt": "100644 c\n"}
	if got := f.treeListing(tree); !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot = %q, want %q", got, want)
	}
}

func TestParseIndexDebugRejectsGarbage(t *testing.T) {
	for _, in := range []string{
		"100644 abc 0\tpath",                   // no terminator
		"100644 abc\tpath\x00",                 // missing stage
		"100644 abc 0\tpath\x00  ctime: 1:2\n", // truncated stat block
		"100644 abc x\tpath\x00",               // bad stage
		"100644 abc 0\tp\x00a\nb\nc\nd\ne\n",   // stat lines without names
		"100644 abc 0\tp\x00  ctime: x:1\n  mtime: 1:1\n  dev: 1\tino: 1\n  uid: 0\tgid: 0\n  size: 1\tflags: 0\n",
	} {
		if _, err := parseIndexDebug([]byte(in)); err == nil {
			t.Errorf("parseIndexDebug(%q) accepted garbage", in)
		}
	}
}
