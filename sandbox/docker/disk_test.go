//go:build linux

package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// TestDiskSurvivesItsRunner: a disk whose runner died (here: forgotten by
// this process, and its owner declared dead) is found by its image,
// its content copied back into the directory and unmounted; the host's
// own files underneath are replaced by what the disk held.
func TestDiskSurvivesItsRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a disk needs root")
	}
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "before"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := mountDisk(ctx, dir, 64<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := diskMountedAt(dir); !ok {
		t.Fatal("not mounted")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "before")); err != nil || string(b) != "host\n" {
		t.Fatalf("the directory's content on its disk: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lost+found")); !os.IsNotExist(err) {
		t.Errorf("lost+found in the directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "during"), []byte("disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "before")); err != nil {
		t.Fatal(err)
	}
	// The runner dies: this process forgets the disk.
	disks.Lock()
	delete(disks.m, dir)
	disks.Unlock()
	// Only this process's disks count as dead, never another process's.
	me := filepath.Base(filepath.Dir(d.work))
	n, err := releaseStale(ctx, func(owner string) bool { return owner == me })
	if err != nil || n < 1 {
		t.Fatalf("releaseStale: %d, %v", n, err)
	}
	if _, ok := diskMountedAt(dir); ok {
		t.Fatal("still mounted")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "during")); err != nil || string(b) != "disk\n" {
		t.Errorf("what was written on the disk, after release: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "before")); !os.IsNotExist(err) {
		t.Errorf("a file removed on the disk is back: %v", err)
	}
	os.RemoveAll(d.work)
}

// TestDiskReleaseCutShortIsFinished: a runner SIGKILLed while releasing a
// disk leaves it staged read-only in its scratch (the worktree below half
// copied); the next ReleaseStaleDisks copies it back and drops the staging
// point, even after a sweep deleted what it could of that scratch.
func TestDiskReleaseCutShortIsFinished(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a disk needs root")
	}
	ctx := context.Background()
	dir := t.TempDir()
	deadRunnersDisk(t, dir, "disk\n")
	// The release, cut after staging: the disk is off dir, which holds a
	// half copy, and only the staging point has the whole.
	work, err := scratch.MkdirTemp("bcode-disk-out-*")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, stagingName(dir))
	if err := stageRelease(ctx, dir, work, out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "half"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(work) // a sweep of the dead owner's scratch: fails on the mount, may take the rest
	me := filepath.Base(filepath.Dir(work))
	if _, err := releaseStale(ctx, func(owner string) bool { return owner == me }); err != nil {
		t.Fatalf("releaseStale: %v", err)
	}
	for _, m := range mountPoints() {
		if m == out {
			t.Fatalf("the staging point %s is still mounted", out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "during")); err != nil || string(b) != "disk\n" {
		t.Errorf("what was written on the disk, after the finished release: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "half")); !os.IsNotExist(err) {
		t.Errorf("the half copy's leftover is still there: %v", err)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("the staging directory is still there: %v", err)
	}
}

// deadRunnersDisk mounts a disk on dir, writes content (unless empty) to
// dir/during on it, and forgets it, as a runner's death would leave it.
func deadRunnersDisk(t *testing.T, dir, content string) {
	t.Helper()
	d, err := mountDisk(context.Background(), dir, 64<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d.work) })
	if content != "" {
		if err := os.WriteFile(filepath.Join(dir, "during"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	disks.Lock()
	delete(disks.m, dir)
	disks.Unlock()
}

// BenchmarkDiskOpenClose is what the disk adds to opening and closing a
// runner on a small tree: mkfs, mount, copy in, copy back, unmount.
func BenchmarkDiskOpenClose(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounting a disk needs root")
	}
	ctx := context.Background()
	dir := b.TempDir()
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), make([]byte, 4096), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		d, err := mountDisk(ctx, dir, DefaultDiskBytes, false)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDiskReleaseCutBeforeUnmount: a runner SIGKILLed between staging's
// bind and its unmount of the directory leaves the disk on both; the next
// release must not empty the directory (which would empty the disk) but
// unmount it and copy the disk back.
func TestDiskReleaseCutBeforeUnmount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a disk needs root")
	}
	ctx := context.Background()
	dir := t.TempDir()
	deadRunnersDisk(t, dir, "disk\n")
	work, err := scratch.MkdirTemp("bcode-disk-out-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	out := filepath.Join(work, stagingName(dir))
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := runTool(ctx, "mount", "--bind", "-o", "ro", dir, out); err != nil {
		t.Fatal(err)
	}
	me := filepath.Base(filepath.Dir(work))
	if _, err := releaseStale(ctx, func(owner string) bool { return owner == me }); err != nil {
		t.Fatalf("releaseStale: %v", err)
	}
	for _, m := range mountPoints() {
		if m == out || m == dir {
			t.Fatalf("%s is still mounted", m)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "during")); err != nil || string(b) != "disk\n" {
		t.Errorf("what was written on the disk, after the finished release: %q %v", b, err)
	}
}

// TestDiskReleaseOfARemovedDirectory: a staged disk whose directory was
// removed since (its task deleted) is dropped, not an error that fails
// every later runner's start.
func TestDiskReleaseOfARemovedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a disk needs root")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "worktree")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	deadRunnersDisk(t, dir, "")
	work, err := scratch.MkdirTemp("bcode-disk-out-*")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, stagingName(dir))
	if err := stageRelease(ctx, dir, work, out); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	me := filepath.Base(filepath.Dir(work))
	if _, err := releaseStale(ctx, func(owner string) bool { return owner == me }); err != nil {
		t.Fatalf("releaseStale: %v", err)
	}
	for _, m := range mountPoints() {
		if m == out {
			t.Fatalf("the staging point %s is still mounted", out)
		}
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("the staging directory is still there: %v", err)
	}
}
