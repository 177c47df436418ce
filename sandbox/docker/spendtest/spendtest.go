//go:build linux

// Package spendtest is the attack suite of the sandbox's "what it can
// spend" boundary (docs/sandbox.md): what a command in the sandbox can
// take of the host's disk, memory, processes and module cache. Every
// implementation of the boundary runs Run with real components (for
// sandbox/docker: a real engine, a real loop-mounted disk, a real module
// view); each case is an attack an agent turned against the user would
// try, and asserts what the kernel did about it.
package spendtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// DiskBytes is the limit the suite asks Open to put on the directory.
const DiskBytes = 256 << 20

// attackBytes is what each disk attack tries to write: far past any limit.
const attackBytes = 3 << 30

// Setup is one runner the suite needs.
type Setup struct {
	// Dir is the existing host directory to open the runner on.
	Dir string
	// DiskBytes is the size the directory must be limited to.
	DiskBytes int64
	// Discard: Dir is a scratch directory whose content is not needed
	// after Close (the gate's).
	Discard bool
	// GoModCache is a host module cache holding Allowed and Private;
	// GoSum the task's go.sum, naming Allowed alone. The container must
	// see exactly GoSum's modules.
	GoModCache string
	GoSum      []byte
}

// Opener opens the implementation's runner for s; the suite closes it.
type Opener func(ctx context.Context, t *testing.T, s Setup) sandbox.ScopedRunner

// Run runs every attack against open.
func Run(t *testing.T, open Opener) {
	cache, gosum := fixtureCache(t)
	t.Run("worktree", func(t *testing.T) {
		dir := worktree(t, gosum)
		r := open(context.Background(), t, Setup{Dir: dir, DiskBytes: DiskBytes, GoModCache: cache, GoSum: gosum})
		closed := false
		defer func() {
			if !closed {
				r.Close()
			}
		}()
		t.Run("modules", func(t *testing.T) { modules(t, r, dir, cache) })
		t.Run("disk", func(t *testing.T) { diskAttacks(t, r, dir) })
		t.Run("memory and tmpfs", func(t *testing.T) { memoryAttacks(t, r) })
		t.Run("processes", func(t *testing.T) { processAttacks(t, r) })
		// The host sees the worktree while the runner is open (the
		// checkpoint reads it between turns), and keeps it after Close.
		res := sh(t, r, "echo from-the-container > made-inside")
		if res.code != 0 {
			t.Fatalf("writing the worktree: %s", res.out)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "made-inside")); err != nil || string(b) != "from-the-container\n" {
			t.Errorf("the host reads the worktree while the runner is open: %q, %v", b, err)
		}
		closed = true
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "made-inside")); err != nil || string(b) != "from-the-container\n" {
			t.Errorf("the worktree after Close: %q, %v", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !strings.Contains(string(b), Allowed.Path) {
			t.Errorf("the worktree's own files after Close: %q, %v", b, err)
		}
	})
	t.Run("scratch", func(t *testing.T) {
		dir := t.TempDir()
		r := open(context.Background(), t, Setup{Dir: dir, DiskBytes: DiskBytes, Discard: true, GoModCache: cache, GoSum: gosum})
		defer r.Close()
		fill(t, r, dir, "dd", "dd if=/dev/zero of=big bs=1M count="+strconv.Itoa(attackBytes>>20))
	})
}

// worktree is a Go module requiring Allowed, with gosum as its go.sum.
func worktree(t *testing.T, gosum []byte) string {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":          "module example.com/wt\n\ngo 1.21\n\nrequire " + Allowed.Path + " " + Allowed.Version + "\n",
		"go.sum":          string(gosum),
		"main.go":         "package main\n\nimport \"" + Allowed.Path + "\"\n\nfunc main() { _ = allowed.Answer }\n",
		"private/go.mod":  "module example.com/wt/private\n\ngo 1.21\n\nrequire " + Private.Path + " " + Private.Version + "\n",
		"private/main.go": "package main\n\nimport \"" + Private.Path + "\"\n\nfunc main() { println(private.Secret) }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

type result struct {
	out  string
	code int
}

// sh runs script with sh -c in the runner's directory; stderr is folded
// into out.
func sh(t *testing.T, r sandbox.ScopedRunner, script string) result {
	t.Helper()
	res, err := r.Run(context.Background(), sandbox.Command{Args: []string{"sh", "-c", "exec 2>&1\n" + script}, Timeout: 3 * time.Minute, OutputLimit: 64 << 10})
	if err != nil {
		t.Fatalf("running %q: %v", script, err)
	}
	if res.TimedOut {
		return result{out: string(res.Stdout) + "\n(timed out)", code: -1}
	}
	return result{out: string(res.Stdout), code: res.ExitCode}
}

// modules: the task's module is there and works; another project's, in
// the same host cache, is not readable in any way; the view is read-only;
// the host cache's own path does not exist inside.
func modules(t *testing.T, r sandbox.ScopedRunner, dir, hostCache string) {
	res := sh(t, r, "go list -deps -f '{{.ImportPath}} {{.Dir}}' . && cat \"$(go list -f '{{.Dir}}' "+Allowed.Path+")/allowed.go\"")
	if res.code != 0 || !strings.Contains(res.out, "const Answer = 42") {
		t.Errorf("the task's own module in the sandbox: exit %d\n%s", res.code, res.out)
	}
	res = sh(t, r, "cd private && go list -deps .")
	if res.code == 0 || strings.Contains(res.out, PrivateSecret) {
		t.Errorf("a module not in go.sum resolved in the sandbox: exit %d\n%s", res.code, res.out)
	}
	res = sh(t, r, `m=$(go env GOMODCACHE); cat "$m/`+Private.Path+"@"+Private.Version+`/private.go"; cat "$m/cache/download/`+Private.Path+`/@v/`+Private.Version+`.zip"; grep -r `+PrivateSecret+` "$m" "$HOME" /opt /tmp; exit 0`)
	if strings.Contains(res.out, PrivateSecret) {
		t.Errorf("another project's module is readable in the sandbox:\n%s", res.out)
	}
	res = sh(t, r, `ls -a "$(go env GOMODCACHE)/cache/download/example.com/spend/" "$(go env GOMODCACHE)/example.com/spend/"`)
	for _, l := range strings.Fields(res.out) {
		if strings.HasPrefix(l, "private") {
			t.Errorf("another project's module is listed in the sandbox:\n%s", res.out)
		}
	}
	for _, p := range []string{hostCache, hostGOMODCACHE()} {
		if p == "" {
			continue
		}
		res = sh(t, r, "ls -d '"+p+"' && find '"+p+"' -maxdepth 3 | head -5")
		if res.code == 0 {
			t.Errorf("the host's module cache %s is reachable in the sandbox:\n%s", p, res.out)
		}
	}
	res = sh(t, r, `m=$(go env GOMODCACHE); for p in "$m/poison" "$m/cache/download/poison" "$m/`+Allowed.Path+"@"+Allowed.Version+`/allowed.go"; do if echo x >> "$p"; then echo WROTE "$p"; fi; done; chmod u+w "$m/`+Allowed.Path+"@"+Allowed.Version+`" && echo CHMOD; exit 0`)
	if strings.Contains(res.out, "WROTE") || strings.Contains(res.out, "CHMOD") || !strings.Contains(res.out, "Read-only file system") {
		t.Errorf("writing the module view:\n%s", res.out)
	}
}

// diskAttacks: every way of writing 3 GiB into the directory stops at
// the limit with ENOSPC, and the host's disk grows by at most the limit.
func diskAttacks(t *testing.T, r sandbox.ScopedRunner, dir string) {
	n := strconv.Itoa(attackBytes >> 20)
	for _, a := range []struct{ name, script string }{
		{"dd", "dd if=/dev/zero of=big bs=1M count=" + n},
		{"fallocate", "fallocate -l " + n + "M big"},
		{"sparse then fill", "truncate -s " + n + "M big && dd if=/dev/zero of=big bs=1M count=" + n + " conv=notrunc"},
		{"many files of 1 MiB", "mkdir many && i=0; while [ $i -lt 3072 ]; do head -c 1048576 /dev/zero > many/$i || exit 1; i=$((i+1)); done"},
		{"python writes and fsyncs", `python3 -c "
import os
f = open('big', 'wb')
b = b'\0' * (1 << 20)
for _ in range(` + n + `):
    f.write(b)
    os.fsync(f.fileno())
"`},
	} {
		t.Run(a.name, func(t *testing.T) { fill(t, r, dir, a.name, a.script) })
	}
	t.Run("inodes", func(t *testing.T) {
		res := sh(t, r, `python3 -c "
import os
os.mkdir('inodes')
for i in range(2000000):
    open('inodes/%d' % i, 'w').close()
"`)
		if res.code == 0 || !strings.Contains(res.out, "No space left on device") {
			t.Errorf("2 million empty files: exit %d, want ENOSPC\n%s", res.code, tail(res.out))
		}
		sh(t, r, "rm -rf inodes")
	})
}

// fill runs one disk attack in dir and checks what it achieved.
func fill(t *testing.T, r sandbox.ScopedRunner, dir, name, script string) {
	t.Helper()
	before := hostFree(t, filepath.Dir(dir))
	res := sh(t, r, script)
	used := treeBlocks(dir)
	after := hostFree(t, filepath.Dir(dir))
	t.Logf("%s: exit %d, the directory holds %d MiB on the host, host free space fell %d MiB", name, res.code, used>>20, (before-after)>>20)
	if res.code == 0 || !strings.Contains(res.out, "No space left on device") {
		t.Errorf("%s of 3 GiB: exit %d, want a failure with ENOSPC\n%s", name, res.code, tail(res.out))
	}
	if used > DiskBytes {
		t.Errorf("%s: the directory holds %d bytes on the host, over the %d limit", name, used, int64(DiskBytes))
	}
	// Other processes share the host's disk: allow them 512 MiB of noise,
	// far below the 3 GiB an unlimited attack takes.
	if before-after > DiskBytes+512<<20 {
		t.Errorf("%s: the host's free space fell by %d MiB", name, (before-after)>>20)
	}
	if res := sh(t, r, "rm -rf big many"); res.code != 0 {
		t.Fatalf("cleaning up: %s", res.out)
	}
}

// memoryAttacks: the memory-backed places a command can write (/tmp, the
// home directory, /dev/shm) are bounded, the read-only ones refuse, and a
// balloon is stopped.
func memoryAttacks(t *testing.T, r sandbox.ScopedRunner) {
	n := strconv.Itoa(attackBytes >> 20)
	for _, p := range []string{"/tmp", "$HOME", "/dev/shm"} {
		res := sh(t, r, "dd if=/dev/zero of="+p+"/big bs=1M count="+n+"; rc=$?; ls -s --block-size=1M "+p+"/big; rm -f "+p+"/big; exit $rc")
		if res.code == 0 || !strings.Contains(res.out, "No space left on device") {
			t.Errorf("3 GiB into %s: exit %d, want ENOSPC\n%s", p, res.code, tail(res.out))
		}
	}
	for _, p := range []string{"/var/tmp", "/", "/opt", "/usr"} {
		res := sh(t, r, "dd if=/dev/zero of="+p+"/big bs=1M count=1")
		if res.code == 0 {
			t.Errorf("writing %s succeeded:\n%s", p, res.out)
		}
	}
	res := sh(t, r, `python3 -c "
import os, sys
os.mkdir('/tmp/inodes')
for i in range(2000000):
    open('/tmp/inodes/%d' % i, 'w').close()
"`)
	if res.code == 0 || !strings.Contains(res.out, "No space left on device") {
		t.Errorf("2 million empty files in /tmp: exit %d, want ENOSPC\n%s", res.code, tail(res.out))
	}
	res = sh(t, r, `python3 -c "
import sys
held = []
while len(held) < 64:
    held.append(bytearray(256 << 20))
    print(len(held) * 256, flush=True)
"`)
	lines := strings.Fields(res.out)
	got := 0
	for _, l := range lines {
		if v, err := strconv.Atoi(l); err == nil {
			got = v
		}
	}
	t.Logf("memory balloon: exit %d after %d MiB", res.code, got)
	if res.code == 0 || got >= 16<<10 {
		t.Errorf("a 16 GiB balloon: exit %d after %d MiB, want it stopped", res.code, got)
	}
}

// processAttacks: a fork bomb and a flood of sleeping processes stop at
// the pids limit; the command still ends.
func processAttacks(t *testing.T, r sandbox.ScopedRunner) {
	res := sh(t, r, `python3 -c "
import os, signal, time
kids = []
try:
    for i in range(20000):
        pid = os.fork()
        if pid == 0:
            time.sleep(300)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print('fork failed:', e)
print('forked', len(kids), flush=True)
for k in kids:
    os.kill(k, signal.SIGKILL)
"`)
	n := -1
	if _, after, ok := strings.Cut(res.out, "forked "); ok {
		n, _ = strconv.Atoi(strings.Fields(after)[0])
	}
	t.Logf("process flood: %d processes forked", n)
	if n < 0 || n >= 4096 || !strings.Contains(res.out, "fork failed") {
		t.Errorf("process flood: %d processes, want fork to fail at a bound\n%s", n, tail(res.out))
	}
	start := time.Now()
	res2, err := r.Run(context.Background(), sandbox.Command{Args: []string{"sh", "-c", "b() { b | b & }; b; sleep 20"}, Timeout: 30 * time.Second, OutputLimit: 4 << 10})
	if err != nil {
		t.Fatalf("fork bomb: %v", err)
	}
	t.Logf("fork bomb: exit %d, timed out %v, %v", res2.ExitCode, res2.TimedOut, time.Since(start))
	if time.Since(start) > 2*time.Minute {
		t.Errorf("the fork bomb's container took %v to end", time.Since(start))
	}
	if out, err := exec.Command("true").CombinedOutput(); err != nil {
		t.Errorf("the host cannot fork after the bomb: %v %s", err, out)
	}
}

// hostGOMODCACHE is the host's own module cache, which must not exist in
// the container ("" without go).
func hostGOMODCACHE() string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// hostFree is the free space of the filesystem holding p, in bytes.
func hostFree(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// treeBlocks is what the files below dir take on disk.
func treeBlocks(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// tail is the end of a command's output, for a failure message.
func tail(s string) string {
	if len(s) > 2000 {
		return fmt.Sprintf("…%s", s[len(s)-2000:])
	}
	return s
}
