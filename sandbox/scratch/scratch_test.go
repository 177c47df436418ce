package scratch

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// owned is a real process started for a test, waited for by one goroutine.
type owned struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startOwned starts a real `sleep` whose environment says owner started it.
func startOwned(t *testing.T, owner string) *owned {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), OwnerEnv+"="+owner)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &owned{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(o.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-o.done })
	return o
}

// exited reports whether o's process has ended within the time given.
func exited(o *owned, within time.Duration) bool {
	select {
	case <-o.done:
		return true
	case <-time.After(within):
		return false
	}
}

// TestSweep lays out owners' directories for real processes in every state
// and checks a sweep removes exactly the dead ones (with a read-only
// directory inside, as go build leaves them) and kills the processes that
// dead owner started, and nothing else.
func TestSweep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("owners are judged by /proc (pid, start time, boot id): linux only")
	}
	t.Setenv("TMPDIR", t.TempDir())
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	// A dead owner: a process that ran and was reaped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Owner{PID: gone.Process.Pid, StartTime: 12345, BootID: bootID()}
	// A live owner, with its real start time.
	live := startOwned(t, "unrelated")
	st, _ := processStartTime(live.cmd.Process.Pid)
	liveOwner := Owner{PID: live.cmd.Process.Pid, StartTime: st, BootID: bootID()}
	// The same live pid with another start time: a reused pid, so dead.
	reused := Owner{PID: live.cmd.Process.Pid, StartTime: st + 1, BootID: bootID()}
	// Another boot: dead whatever its pid.
	otherBoot := Owner{PID: os.Getpid(), StartTime: 1, BootID: "00000000-0000-0000-0000-000000000000"}

	for _, o := range []Owner{dead, liveOwner, reused, otherBoot} {
		ro := filepath.Join(root, o.String(), "tmp", "go-build1", "ro")
		if err := os.MkdirAll(ro, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o400)
		os.Chmod(ro, 0o500)
	}
	os.Mkdir(filepath.Join(root, "not-an-owner"), 0o700)
	orphan := startOwned(t, dead.String())
	bystander := startOwned(t, liveOwner.String())

	s, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if s.Dirs != 3 || s.Processes != 1 {
		t.Errorf("swept %+v, want 3 directories and 1 process", s)
	}
	for o, want := range map[Owner]bool{dead: false, liveOwner: true, reused: false, otherBoot: false} {
		_, err := os.Stat(filepath.Join(root, o.String()))
		if got := err == nil; got != want {
			t.Errorf("%s kept=%v, want %v", o, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "not-an-owner")); err != nil {
		t.Errorf("a directory that names no owner was removed: %v", err)
	}
	if !exited(orphan, 5*time.Second) {
		t.Error("the dead owner's process still runs")
	}
	if exited(bystander, 200*time.Millisecond) {
		t.Error("a live owner's process was killed")
	}
}

// TestOwnDirectory: MkdirTemp puts directories in this process's directory,
// Env names it, a sweep leaves it alone, and Release kills what it started
// and removes it.
func TestOwnDirectory(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d, err := MkdirTemp("bcode-snap-*")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := Root()
	own := filepath.Join(root, Self().String())
	if filepath.Dir(d) != own || !strings.HasPrefix(filepath.Base(d), "bcode-snap-") {
		t.Fatalf("MkdirTemp made %s, want bcode-snap-* in %s", d, own)
	}
	if Env() != OwnerEnv+"="+Self().String() {
		t.Errorf("Env() = %q", Env())
	}
	if _, err := Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("a sweep removed this live process's directory: %v", err)
	}
	var child *owned
	if runtime.GOOS == "linux" {
		child = startOwned(t, Self().String())
	}
	if err := Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("Release left %s: %v", own, err)
	}
	if child != nil && !exited(child, 5*time.Second) {
		t.Error("Release left this process's child running")
	}
}

// TestRootRefusesPlanted: a root that is a link, or writable by others, is
// refused rather than used.
func TestRootRefusesPlanted(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	name := filepath.Join(tmp, "bcode-"+strconv.Itoa(os.Getuid()))
	if runtime.GOOS == "windows" {
		t.Skip("no uid-named root on windows")
	}
	target := t.TempDir()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
	if _, err := Root(); err == nil || !strings.Contains(err.Error(), "not a private directory") {
		t.Errorf("a symlinked root: %v", err)
	}
	os.Remove(name)
	os.Mkdir(name, 0o777)
	os.Chmod(name, 0o777)
	if _, err := Root(); err == nil {
		t.Error("a world-writable root was accepted")
	}
}

func TestParseMountInfo(t *testing.T) {
	in := "36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n" +
		"47 27 7:0 / /tmp/x rw,nosuid - ext4 /dev/loop0 rw\n" +
		"short line\n"
	got := parseMountInfo([]byte(in))
	want := []Mount{{Point: "/mnt/a b", Source: "/dev/root"}, {Point: "/tmp/x", Source: "/dev/loop0"}}
	if !slices.Equal(got, want) {
		t.Fatalf("parseMountInfo: %+v, want %+v", got, want)
	}
	if !holdsMount(got, "/tmp") || !holdsMount(got, "/tmp/x") || holdsMount(got, "/tmp/x2") || holdsMount(got, "/tmp/x/y") {
		t.Error("holdsMount: wrong answer for /tmp, /tmp/x, /tmp/x2 or /tmp/x/y")
	}
}
