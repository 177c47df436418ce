package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	lscmd "github.com/bcode-dev/bcode/server/command"
)

// The kill loops below SIGKILL real bcode and bcode-ls processes while a
// slow test of a real repository runs under them, and count what is left:
// scratch directories of the killed process, and processes it started. The
// direct children must be gone at once (parent-death signal); everything
// else must be gone after the next bcode starts (its sweep). The number of
// kills per loop is BCODE_KILLS (default 3, so that the package's tests stay
// inside go test's default 10-minute timeout on a loaded 2-core machine;
// 1 with -short).

func killCount(t *testing.T) int {
	if s := os.Getenv("BCODE_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("BCODE_KILLS=%q: want a positive number", s)
		}
		return n
	}
	if testing.Short() {
		return 1
	}
	return 3
}

// slowRepo is a Go repository whose change base..head tightens Under and
// adds a test that sleeps before it checks: the gate, evidence's baseline
// and the server's evidence run all wait on it.
func slowRepo(t *testing.T) string {
	t.Helper()
	return evidenceRepo(t, map[string]string{
		"go.mod":       "module example.com/slow\n\ngo 1.21\n",
		"slow.go":      "package slow\n\n// Under reports whether n is under 10.\nfunc Under(n int) bool { return n <= 10 }\n",
		"slow_test.go": "package slow\n\nimport \"testing\"\n\nfunc TestSmall(t *testing.T) {\n\tif !Under(1) {\n\t\tt.Fatal(1)\n\t}\n}\n",
	}, map[string]string{
		"slow.go": "package slow\n\n// Under reports whether n is under 10.\nfunc Under(n int) bool { return n < 10 }\n",
		"slow_test.go": "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSmall(t *testing.T) {\n\tif !Under(1) {\n\t\tt.Fatal(1)\n\t}\n}\n\n" +
			"func TestTen(t *testing.T) {\n\ttime.Sleep(60 * time.Second)\n\tif Under(10) {\n\t\tt.Fatal(\"10 is not under 10\")\n\t}\n}\n",
	})
}

// ownedProc is a live process whose environment says which bcode started it.
type ownedProc struct {
	pid  int
	comm string
}

// ownedBy lists the live (not zombie) processes carrying the scratch owner
// id of pid in their environment.
func ownedBy(pid int) []ownedProc {
	want := []byte("\x00" + scratch.OwnerEnv + "=" + strconv.Itoa(pid) + "-")
	ents, _ := os.ReadDir("/proc")
	var out []ownedProc
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		out = append(out, ownedProc{p, strings.TrimSpace(string(comm))})
	}
	return out
}

// ownerDirs counts the scratch directories of pid under root and their size.
func ownerDirs(root string, pid int) (n int, size int64) {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), strconv.Itoa(pid)+"-") {
			continue
		}
		n++
		filepath.WalkDir(filepath.Join(root, e.Name()), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
	}
	return n, size
}

// stableDirs counts the stable directories (scratch.Hold: a gate's
// snapshots) under root and their size: with one bcode at a time, every
// one there is what the killed process held.
func stableDirs(root string) (n int, size int64) {
	filepath.WalkDir(filepath.Join(root, "stable"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if _, err := os.Lstat(p + ".lock"); err != nil {
			return nil
		}
		n++
		filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
		return filepath.SkipDir
	})
	return n, size
}

// waitFor polls until cond holds or the time is up.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runningTest reports whether a test runs under pid: a Go test binary, or
// pytest.
func runningTest(pid int) bool {
	for _, p := range ownedBy(pid) {
		if strings.HasSuffix(p.comm, ".test") {
			return true
		}
		if strings.HasPrefix(p.comm, "python") {
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
			// The gate's isolated bootstrap names bcode's plugin file;
			// mutation evidence runs pymutate.py.
			if bytes.Contains(cmdline, []byte("/bcode_pytest_log.py\x00")) || bytes.Contains(cmdline, []byte("/pymutate.py\x00")) {
				return true
			}
		}
	}
	return false
}

// slowPyRepo is slowRepo in Python, for pytest.
func slowPyRepo(t *testing.T) string {
	t.Helper()
	return evidenceRepo(t, map[string]string{
		"slow.py":      "def under(n):\n    return n <= 10\n",
		"test_slow.py": "from slow import under\n\n\ndef test_small():\n    assert under(1)\n",
	}, map[string]string{
		"slow.py":      "def under(n):\n    return n < 10\n",
		"test_slow.py": "import time\n\nfrom slow import under\n\n\ndef test_small():\n    assert under(1)\n\n\ndef test_ten():\n    time.sleep(60)\n    assert not under(10)\n",
	})
}

// killLoopEnv is what every process of a kill loop runs with: its own
// TMPDIR (so the scratch root is the test's) and state dir.
type killLoopEnv struct {
	tmp, root, state string
	bcode            string
	env              []string
}

func newKillLoopEnv(t *testing.T) *killLoopEnv {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the kill loops count processes through /proc: linux only")
	}
	evidenceTools(t)
	k := &killLoopEnv{tmp: t.TempDir(), state: t.TempDir()}
	k.root = filepath.Join(k.tmp, "bcode-"+strconv.Itoa(os.Getuid()))
	k.bcode = filepath.Join(t.TempDir(), "bcode")
	if out, err := exec.Command("go", "build", "-o", k.bcode, ".").CombinedOutput(); err != nil {
		t.Fatalf("building bcode: %v\n%s", err, out)
	}
	k.env = append(os.Environ(), "TMPDIR="+k.tmp, "BCODE_STATE="+k.state)
	return k
}

// sweep runs the next bcode: its start sweeps.
func (k *killLoopEnv) sweep(t *testing.T) {
	t.Helper()
	cmd := exec.Command(k.bcode, "help")
	cmd.Env = k.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bcode help: %v\n%s", err, out)
	}
}

// strays lists what is in TMPDIR outside the scratch root, other than the
// two shared, per-user homes bcode keeps on purpose.
func (k *killLoopEnv) strays() []string {
	ents, _ := os.ReadDir(k.tmp)
	var out []string
	uid := strconv.Itoa(os.Getuid())
	for _, e := range ents {
		switch e.Name() {
		case "bcode-" + uid, "bcode-home-" + uid, "bcode-git-home-" + uid:
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// tally is what a kill loop left, summed over its kills.
type tally struct {
	kills                 int
	dirsBefore            int
	bytesBefore           int64
	procsBefore           int
	childrenAfterKill     int // direct children (go, a test binary bcode ran itself) still up 2 s after the kill
	dirsAfter, procsAfter int
}

// check counts what the killed process pid left, sweeps, and counts again.
func (k *killLoopEnv) check(t *testing.T, pid int, directChild func(ownedProc) bool, tl *tally) {
	t.Helper()
	tl.kills++
	// The parent-death signal is immediate; give the kernel a moment.
	waitFor(2*time.Second, func() bool {
		for _, p := range ownedBy(pid) {
			if directChild(p) {
				return false
			}
		}
		return true
	})
	for _, p := range ownedBy(pid) {
		if directChild(p) {
			tl.childrenAfterKill++
			t.Errorf("kill %d: %s (pid %d), started by the killed process, outlived it", tl.kills, p.comm, p.pid)
		}
	}
	d, size := ownerDirs(k.root, pid)
	sd, ssize := stableDirs(k.root)
	d, size = d+sd, size+ssize
	tl.dirsBefore += d
	tl.bytesBefore += size
	tl.procsBefore += len(ownedBy(pid))

	k.sweep(t)
	waitFor(2*time.Second, func() bool { return len(ownedBy(pid)) == 0 })
	left := ownedBy(pid)
	d, _ = ownerDirs(k.root, pid)
	sd, _ = stableDirs(k.root)
	d += sd
	tl.dirsAfter += d
	tl.procsAfter += len(left)
	if d != 0 || len(left) != 0 {
		t.Errorf("kill %d: after the next start's sweep, %d directories and processes %v of pid %d remain", tl.kills, d, left, pid)
	}
}

func (tl tally) log(t *testing.T, what string) {
	t.Logf("%s: %d kills; before the sweep %d scratch dirs (%d KiB) and %d processes; direct children alive after the kill %d; after the sweep %d dirs, %d processes",
		what, tl.kills, tl.dirsBefore, tl.bytesBefore>>10, tl.procsBefore, tl.childrenAfterKill, tl.dirsAfter, tl.procsAfter)
}

// killCommand SIGKILLs `bcode args...` once a test binary runs under it.
func (k *killLoopEnv) killCommand(t *testing.T, args []string, tl *tally) {
	t.Helper()
	cmd := exec.Command(k.bcode, args...)
	cmd.Env = k.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	began := time.Now()
	defer func() { t.Logf("kill %d: a test ran %.1fs after bcode started", tl.kills, time.Since(began).Seconds()) }()
	if !waitFor(90*time.Second, func() bool { return runningTest(pid) }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("bcode %v never ran a test binary:\n%s", args, out.String())
	}
	time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// bcode's direct children are go (go test, go build), pytest and the
	// test binaries evidence runs itself.
	direct := func(p ownedProc) bool {
		return parentOf(p.pid) == pid || p.comm == "go" || strings.HasPrefix(p.comm, "python")
	}
	k.check(t, pid, direct, tl)
}

// parentOf is pid's parent, from /proc.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// TestKillCheckLeavesNothing: SIGKILL of `bcode check` during a slow Go
// test, and during a slow pytest test.
func TestKillCheckLeavesNothing(t *testing.T) {
	k := newKillLoopEnv(t)
	for _, lang := range []string{"go", "python"} {
		t.Run(lang, func(t *testing.T) {
			repo := ""
			switch lang {
			case "go":
				repo = slowRepo(t)
			case "python":
				testenv.SystemPytest(t)
				repo = slowPyRepo(t)
			}
			n := killCount(t)
			if lang == "python" && os.Getenv("BCODE_KILLS") == "" {
				// pytest starts slowly and the gate's tamper pass comes
				// first: fewer kills keep the loop under a minute.
				n = (n + 1) / 2
			}
			var tl tally
			for range n {
				k.killCommand(t, []string{"check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--no-evidence"}, &tl)
			}
			tl.log(t, "bcode check, "+lang)
		})
	}
	if s := k.strays(); len(s) != 0 {
		t.Errorf("left in TMPDIR outside the scratch root: %v", s)
	}
}

// TestKillEvidenceLeavesNothing: SIGKILL of `bcode evidence` while its
// baseline runs the slow test.
func TestKillEvidenceLeavesNothing(t *testing.T) {
	k := newKillLoopEnv(t)
	repo := slowRepo(t)
	var tl tally
	for range killCount(t) {
		k.killCommand(t, []string{"evidence", "-q", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--workers", "1"}, &tl)
	}
	tl.log(t, "bcode evidence")
	if s := k.strays(); len(s) != 0 {
		t.Errorf("left in TMPDIR outside the scratch root: %v", s)
	}
}

// TestKillLanguageServerLeavesNothing: bcode-ls during an evidence run,
// ended three ways: SIGKILL, `exit` without `shutdown`, and its stdin
// closed. The last two end the process normally, so nothing may be left
// even before a sweep.
func TestKillLanguageServerLeavesNothing(t *testing.T) {
	k := newKillLoopEnv(t)
	ls := bcodeLS(t)
	repo := slowRepo(t)
	// The server inherits this process's environment.
	t.Setenv("TMPDIR", k.tmp)
	t.Setenv("BCODE_STATE", k.state)
	for _, how := range []string{"SIGKILL", "exit without shutdown", "stdin closed"} {
		t.Run(how, func(t *testing.T) {
			var tl tally
			for range killCount(t) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cl, err := startServer(ctx, ls, io.Discard, true)
				if err != nil {
					t.Fatal(err)
				}
				pid := cl.Process().Pid
				started := make(chan error, 1)
				go func() {
					init := map[string]any{"processId": os.Getpid(), "rootUri": "file://" + repo, "capabilities": map[string]any{}}
					if _, err := cl.Initialize(ctx, init); err != nil {
						started <- err
						return
					}
					var run lscmd.EvidenceRunResult
					started <- cl.Conn.Call(ctx, "workspace/executeCommand", map[string]any{
						"command": lscmd.EvidenceRun, "arguments": []any{lscmd.EvidenceRunArgs{Base: "HEAD~1"}},
					}, &run)
				}()
				if !waitFor(90*time.Second, func() bool { return runningTest(pid) }) {
					cl.Process().Kill()
					t.Fatalf("bcode-ls never ran a test binary (%v):%s", <-started, cl.LogTail())
				}
				time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
				switch how {
				case "SIGKILL":
					cl.Process().Signal(syscall.SIGKILL)
				case "exit without shutdown":
					cl.Conn.Notify(ctx, "exit", nil)
				case "stdin closed":
					cl.Conn.Close()
				}
				exited := make(chan error, 1)
				go func() { exited <- cl.Wait() }()
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					cl.Process().Kill()
					<-exited
					t.Errorf("%s: bcode-ls did not end within 30 s", how)
				}
				cl.Conn.Close()
				cancel()
				if how != "SIGKILL" {
					// A normal end: Release ran, nothing to sweep.
					if d, _ := ownerDirs(k.root, pid); d != 0 || len(ownedBy(pid)) != 0 {
						t.Errorf("%s: before any sweep, %d directories and processes %v remain", how, d, ownedBy(pid))
					}
				}
				direct := func(p ownedProc) bool { return parentOf(p.pid) == pid || p.comm == "go" }
				k.check(t, pid, direct, &tl)
			}
			tl.log(t, "bcode-ls, "+how)
		})
	}
	if s := k.strays(); len(s) != 0 {
		t.Errorf("left in TMPDIR outside the scratch root: %v", s)
	}
}
