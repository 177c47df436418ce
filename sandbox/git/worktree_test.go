package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWorktreeAddReuseRemove(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("a.txt", "base\n")
	base := f.commit("base")
	f.write("a.txt", "main moved\n")
	f.commit("main moves")
	r := f.open()

	wt := filepath.Join(t.TempDir(), "task-1")
	if err := r.WorktreeAdd(ctx, wt, "bcode/task-1", base); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(b) != "base\n" {
		t.Errorf("worktree content = %q, %v; want the base", b, err)
	}
	if got := strings.TrimSpace(f.git("rev-parse", "bcode/task-1")); got != base {
		t.Errorf("branch at %s, want %s", got, base)
	}
	// A commit on the task branch, then remove and re-add: the branch is
	// reused with its commit, and base is ignored.
	wtRepo, err := Open(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "a.txt"), []byte("task work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wtRepo.Git(ctx, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-am", "checkpoint"); err != nil {
		t.Fatal(err)
	}
	// Leave an uncommitted edit: remove is forced.
	if err := os.WriteFile(filepath.Join(wt, "dirty.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.WorktreeRemove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree still on disk: %v", err)
	}
	if err := r.WorktreeAdd(ctx, wt, "bcode/task-1", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(b) != "task work\n" {
		t.Errorf("re-added worktree = %q, want the task branch's commit", b)
	}
	if list := f.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 2 {
		t.Errorf("worktree list:\n%s", list)
	}

	// A directory that vanished behind git's back is pruned.
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	if err := r.WorktreeRemove(ctx, wt); err != nil {
		t.Errorf("removing a vanished worktree: %v", err)
	}
	if list := f.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("stale worktree not pruned:\n%s", list)
	}

	for _, bad := range []string{"-b", "bad..name", "bad name", ""} {
		if err := r.WorktreeAdd(ctx, filepath.Join(t.TempDir(), "x"), bad, base); err == nil {
			t.Errorf("WorktreeAdd with branch %q succeeded", bad)
		}
	}
	if err := r.WorktreeAdd(ctx, filepath.Join(t.TempDir(), "x"), "bcode/t2", "nosuchrev"); err == nil || !strings.Contains(err.Error(), "bad revision") {
		t.Errorf("bad base: err = %v", err)
	}
}

// BenchmarkSnapshotWorktree snapshots a 10,000-file repository in which a
// handful of files changed: the cost a `bcode check` pays on every run.
func BenchmarkSnapshotWorktree(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b)
	dir := f.dir
	run := func(args ...string) { f.git(args...) }
	for i := 0; i < 10000; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package p\n\nconst C%d = %d\n", i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	run("add", "-A")
	run("commit", "-q", "-m", "10k files")
	// Let the index age past racy-git so unchanged files are trusted,
	// as in any real checkout.
	run("update-index", "--refresh")
	for i := 0; i < 5; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i*7), fmt.Sprintf("file%05d.go", i*700))
		if err := os.WriteFile(p, []byte("package p\n// changed\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "new.go"), []byte("package p\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	// CPU time (bcode's and git's) says what a snapshot costs when the
	// machine is shared and wall time mostly measures waiting.
	cpu := func(who int) time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	self0, git0 := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
	for b.Loop() { // the 10k-file setup above runs once
		if _, err := r.SnapshotWorktree(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpu(syscall.RUSAGE_SELF)-self0).Milliseconds())/float64(b.N), "bcode-cpu-ms/op")
	b.ReportMetric(float64((cpu(syscall.RUSAGE_CHILDREN)-git0).Milliseconds())/float64(b.N), "git-cpu-ms/op")
}

// TestRemoveLinkedWorktreeLeftInitializing: a `git worktree add` killed
// mid-checkout leaves its admin record locked "initializing", which prune
// keeps; removing the worktree must also drop that record, or the branch
// stays checked out at a directory that is gone and the next holder's add
// fails (CI: TestSharedKillLoop, "'bcode/…' is already checked out at …-f1").
func TestRemoveLinkedWorktreeLeftInitializing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("a.txt", "base\n")
	base := f.commit("base")
	r := f.open()
	dir := t.TempDir()
	first := filepath.Join(dir, "task-f1")
	if err := r.WorktreeAdd(ctx, first, "bcode/task", base); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", first, "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(out))
	if err := os.WriteFile(filepath.Join(admin, "locked"), []byte("initializing"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveLinkedWorktree(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "task-f2")
	if err := r.WorktreeAdd(ctx, second, "bcode/task", base); err != nil {
		t.Fatalf("adding the next holder's worktree: %v", err)
	}
}
