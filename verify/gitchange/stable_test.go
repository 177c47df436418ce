package gitchange

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify"
)

// stableDir is where r's snapshot in slot ("head-0") is laid out.
func stableDir(t *testing.T, r *repo, slot string) string {
	t.Helper()
	key := stableKey(context.Background(), r.open())
	if key == "" {
		t.Fatal("no stable key for the repository")
	}
	root, err := scratch.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "stable", "snap", key, slot, stableTree)
}

func materialize(t *testing.T, ws verify.Workspace, side verify.Side, overlay []verify.FileChange) string {
	t.Helper()
	dir, err := ws.Materialize(context.Background(), side, overlay)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func load(t *testing.T, r *repo, base, head string) *verify.Change {
	t.Helper()
	c, err := Load(context.Background(), r.open(), base, head)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Workspace.Close() })
	return c
}

// TestStableSnapshotsHoldNothingOfTheLast: one gate after another on a
// repository lays each side out at the same path, and nothing of the last
// gate's snapshot survives there: not a file the later change deleted,
// not a file a test wrote, not the kept test binaries beside it.
func TestStableSnapshotsHoldNothingOfTheLast(t *testing.T) {
	r, _, _ := twoCommits(t)
	// The first gate's head is the commit that still has gone.txt.
	first := load(t, r, "HEAD", "HEAD~1")
	head := materialize(t, first.Workspace, verify.HeadSide, nil)
	if _, err := os.Stat(filepath.Join(head, "gone.txt")); err != nil {
		t.Fatalf("the first head lacks gone.txt: %v", err)
	}
	if err := os.WriteFile(filepath.Join(head, "written-by-a-test.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(head+".test-binaries", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := first.Workspace.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(head); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", head, err)
	}

	later := load(t, r, "HEAD~1", "HEAD")
	again := materialize(t, later.Workspace, verify.HeadSide, nil)
	if again != head {
		t.Errorf("the later head is at %s, want the stable %s", again, head)
	}
	got := listing(t, again)
	for _, p := range []string{"gone.txt", "written-by-a-test.txt"} {
		if _, ok := got[p]; ok {
			t.Errorf("the later head has the last gate's %s", p)
		}
	}
	if got["calc_test.go"] == "" {
		t.Errorf("the later head lacks its own calc_test.go: %q", got)
	}
	if _, err := os.Lstat(again + ".test-binaries"); !os.IsNotExist(err) {
		t.Errorf("the last gate's kept test binaries are there: %v", err)
	}
}

// TestStableSnapshotsOneGateAtATime: two gates at once on one repository
// each get a correct tree of their own (the second takes the next slot),
// and with every slot of a side held the snapshot goes to a fresh
// directory of this process's scratch, without waiting.
func TestStableSnapshotsOneGateAtATime(t *testing.T) {
	r, _, _ := twoCommits(t)
	one, two := load(t, r, "HEAD~1", "HEAD"), load(t, r, "HEAD~1", "HEAD")
	a := materialize(t, one.Workspace, verify.BaseSide, nil)
	b := materialize(t, two.Workspace, verify.BaseSide, nil)
	if a != stableDir(t, r, "base-0") || b != stableDir(t, r, "base-1") {
		t.Errorf("two gates' bases at %s and %s, want slots base-0 and base-1", a, b)
	}
	if err := os.WriteFile(filepath.Join(a, "only-in-one.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{a, b} {
		got := listing(t, d)
		if got["gone.txt"] != "-rw-r--r-- bye\n" || got["calc_test.go"] != "" {
			t.Errorf("%s is not the base: %q", d, got)
		}
	}
	if _, err := os.Lstat(filepath.Join(b, "only-in-one.txt")); !os.IsNotExist(err) {
		t.Errorf("the second gate sees the first one's file: %v", err)
	}

	key := stableKey(context.Background(), r.open())
	for n := 2; n < stableSlots; n++ {
		h, err := scratch.Hold("snap/" + key + "/base-" + string(rune('0'+n)))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release()
	}
	fresh := materialize(t, two.Workspace, verify.BaseSide, nil)
	own, err := scratch.Dir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(fresh) != own || !strings.HasPrefix(filepath.Base(fresh), "bcode-snap-") {
		t.Errorf("with every slot held the snapshot is at %s, want %s/bcode-snap-*", fresh, own)
	}
	if listing(t, fresh)["gone.txt"] == "" {
		t.Errorf("the fresh snapshot is not the base")
	}
	if err := two.Workspace.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(fresh); !os.IsNotExist(err) {
		t.Errorf("Close left the fresh snapshot: %v", err)
	}
}

// crashEnv makes the test binary a gate that is killed holding its
// snapshot (TestHelperCrashingGate).
const crashEnv = "BCODE_TEST_CRASHING_GATE"

// TestHelperCrashingGate lays out the head of the repository
// $BCODE_TEST_CRASHING_GATE, writes a file into it, says where and waits
// to be killed.
func TestHelperCrashingGate(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("run by TestStableSnapshotAfterACrashedGate")
	}
	c := load(t, &repo{t: t, dir: dir}, "HEAD", "HEAD~1")
	head := materialize(t, c.Workspace, verify.HeadSide, nil)
	if err := os.WriteFile(filepath.Join(head, "planted.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("snapshot " + head + "\n")
	time.Sleep(time.Minute)
}

// TestStableSnapshotAfterACrashedGate: a gate SIGKILLed with its snapshot
// laid out leaves a directory and a lock file; the next gate gets the same
// path, holding its own tree only.
func TestStableSnapshotAfterACrashedGate(t *testing.T) {
	r, _, _ := twoCommits(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrashingGate$", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+r.dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var crashed string
	for sc := bufio.NewScanner(out); crashed == "" && sc.Scan(); {
		if dir, ok := strings.CutPrefix(sc.Text(), "snapshot "); ok {
			crashed = dir
		}
	}
	if crashed == "" {
		t.Fatal("the crashing gate laid out no snapshot")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(crashed, "planted.txt")); err != nil {
		t.Fatalf("the crashed gate left nothing to recover: %v", err)
	}

	c := load(t, r, "HEAD~1", "HEAD")
	head := materialize(t, c.Workspace, verify.HeadSide, nil)
	if head != crashed {
		t.Errorf("the next gate's head is at %s, want the crashed gate's %s", head, crashed)
	}
	got := listing(t, head)
	for _, p := range []string{"planted.txt", "gone.txt"} {
		if _, ok := got[p]; ok {
			t.Errorf("the next gate's head has the crashed gate's %s", p)
		}
	}
}
