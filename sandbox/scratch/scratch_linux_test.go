package scratch

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSweepLeavesMountedDirectories: a dead owner's directory with a
// filesystem mounted in it (a worktree disk's staging point) is left
// whole, the mounted files untouched, until the mount is gone.
func TestSweepLeavesMountedDirectories(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a filesystem needs root on linux")
	}
	t.Setenv("TMPDIR", t.TempDir())
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Owner{PID: gone.Process.Pid, StartTime: 12345, BootID: bootID()}
	point := filepath.Join(root, dead.String(), "bcode-disk-out-1", "out")
	if err := os.MkdirAll(point, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "bcode-test", point).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	mounted := true
	defer func() {
		if mounted {
			syscall.Unmount(point, syscall.MNT_DETACH)
		}
	}()
	if err := os.WriteFile(filepath.Join(point, "only-copy"), []byte("work\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Sweep()
	if err != nil || s.Held != 1 || s.Dirs != 0 {
		t.Fatalf("sweep with a mount inside: %+v %v, want one held and none removed", s, err)
	}
	if b, err := os.ReadFile(filepath.Join(point, "only-copy")); err != nil || string(b) != "work\n" {
		t.Fatalf("the mounted file after a sweep: %q %v", b, err)
	}
	if err := syscall.Unmount(point, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	if s, err := Sweep(); err != nil || s.Dirs != 1 {
		t.Fatalf("sweep after the unmount: %+v %v, want the directory removed", s, err)
	}
}
