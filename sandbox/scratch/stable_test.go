//go:build unix

package scratch

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holderEnv makes the test binary a holder of a stable directory (see
// TestHelperHolder) instead of running tests.
const holderEnv = "BCODE_TEST_STABLE_HOLDER"

// TestHelperHolder is the process TestHoldAfterKilledHolder kills: it
// holds the stable directory $BCODE_TEST_STABLE_HOLDER, leaves a file in
// it, says so and waits to be killed.
func TestHelperHolder(t *testing.T) {
	key := os.Getenv(holderEnv)
	if key == "" {
		t.Skip("run by TestHoldAfterKilledHolder")
	}
	h, err := Hold(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "left.txt"), []byte("of the killed holder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held " + h.Dir + "\n")
	time.Sleep(time.Minute)
}

// startHolder runs TestHelperHolder in a process of its own and returns it
// once it holds key, with the directory it holds.
func startHolder(t *testing.T, key string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$", "-test.v")
	cmd.Env = append(os.Environ(), holderEnv+"="+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if dir, ok := strings.CutPrefix(sc.Text(), "held "); ok {
			return cmd, dir
		}
	}
	t.Fatalf("the holder process did not hold %s", key)
	return nil, ""
}

// TestHold: a stable directory is at the same path for each holder in
// turn, empty every time, held by one at a time (another Hold is refused,
// never made to wait), and gone after Release.
func TestHold(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Hold("snap/repo/base-0")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "stable", "snap", "repo", "base-0"); h.Dir != want {
		t.Errorf("Dir = %s, want %s", h.Dir, want)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "a.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Read-only directories, as go build leaves them, do not stop Release.
	if err := os.MkdirAll(filepath.Join(h.Dir, "ro", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(h.Dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	if _, err := Hold("snap/repo/base-0"); !errors.Is(err, ErrHeld) {
		t.Errorf("a second Hold of a held directory: %v, want ErrHeld", err)
	}
	other, err := Hold("snap/repo/base-1")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	// A sweep leaves held directories alone.
	if s, err := Sweep(); err != nil || s.Stable != 0 {
		t.Fatalf("Sweep = %+v, %v", s, err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(h.Dir); !os.IsNotExist(err) {
		t.Errorf("Release left %s: %v", h.Dir, err)
	}
	again, err := Hold("snap/repo/base-0")
	if err != nil {
		t.Fatalf("Hold after Release: %v", err)
	}
	if again.Dir != h.Dir {
		t.Errorf("the next holder got %s, want %s", again.Dir, h.Dir)
	}
	if ents, _ := os.ReadDir(again.Dir); len(ents) != 0 {
		t.Errorf("the next holder's directory holds %v", ents)
	}
	for _, d := range []*Held{again, other} {
		if err := d.Release(); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "..", "a/.", "sp ace", "a\\b"} {
		if _, err := Hold(bad); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}

// TestHoldAfterKilledHolder: a process that held a stable directory and
// was SIGKILLed holds it no more; the next holder gets the same path
// without what the killed one left there, and a sweep removes such a
// leftover when no one takes the path again.
func TestHoldAfterKilledHolder(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const key = "snap/repo/head-0"
	cmd, dir := startHolder(t, key)
	if _, err := Hold(key); !errors.Is(err, ErrHeld) {
		t.Fatalf("Hold of a directory another process holds: %v, want ErrHeld", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	h, err := Hold(key)
	if err != nil {
		t.Fatalf("Hold after its holder was killed: %v", err)
	}
	if h.Dir != dir {
		t.Errorf("got %s, want the killed holder's path %s", h.Dir, dir)
	}
	if ents, _ := os.ReadDir(h.Dir); len(ents) != 0 {
		t.Errorf("the killed holder's files are still there: %v", ents)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	cmd, dir = startHolder(t, key)
	cmd.Process.Kill()
	cmd.Wait()
	s, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if s.Stable != 1 {
		t.Errorf("Sweep removed %d stable directories, want 1", s.Stable)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the sweep left the killed holder's %s: %v", dir, err)
	}
	root, _ := Root()
	if ents, _ := os.ReadDir(filepath.Join(root, leftoverDirName)); len(ents) != 0 {
		t.Errorf("leftovers not removed: %v", ents)
	}
}

// TestSweepInHalves: SweepOwners (what a command runs before its work)
// leaves a killed holder's stable directory; SweepStable (what it runs
// beside its work) removes it.
func TestSweepInHalves(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cmd, dir := startHolder(t, "snap/repo/base-0")
	cmd.Process.Kill()
	cmd.Wait()
	if s, err := SweepOwners(); err != nil || s.Stable != 0 {
		t.Fatalf("SweepOwners = %+v, %v", s, err)
	}
	if _, err := os.Lstat(dir); err != nil {
		t.Fatalf("SweepOwners removed the killed holder's %s: %v", dir, err)
	}
	if n, err := SweepStable(); err != nil || n != 1 {
		t.Fatalf("SweepStable = %d, %v; want 1 removed", n, err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("SweepStable left the killed holder's %s: %v", dir, err)
	}
}

// TestSweepLeavesHeldContents: a sweep does not look inside a held stable
// directory. A snapshot with a directory beside a file named like its lock
// (pkg/ and pkg.lock) once looked like a killed holder's leftover to the
// sweep, which renamed pkg/ out of the live snapshot.
func TestSweepLeavesHeldContents(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	h, err := Hold("snap/repo/base-0")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	inner := filepath.Join(h.Dir, "pkg")
	if err := os.MkdirAll(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inner+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Sweep(); err != nil || s.Stable != 0 {
		t.Fatalf("Sweep = %+v, %v; want nothing removed", s, err)
	}
	if _, err := os.Stat(inner); err != nil {
		t.Errorf("the sweep took %s out of a held snapshot: %v", inner, err)
	}
}
