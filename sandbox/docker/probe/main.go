// Command probe is the sandbox's escape probe: a static binary the escape
// suite (sandbox/docker's TestEscapeProbe) runs inside the container. It
// tries what a hostile test or agent would try — gain capabilities, leave
// through a user namespace or a mount, reach the Docker socket, the network
// or the host's loopback, exhaust the pids, write /proc/sys or the root,
// read masked secrets — and prints what happened as one JSON object. It
// judges nothing itself: the test on the host asserts.
//
//	probe [-connect host:port]... [-read path]... [-write path]... [-forks N]
//
// Build it with CGO_ENABLED=0 so it needs nothing from the container.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Report is what the probe saw. Errors are strings ("" = it worked).
type Report struct {
	UID, EUID, GID int
	Status         map[string]string // CapEff, CapPrm, CapBnd, NoNewPrivs, Seccomp from /proc/self/status
	UnshareUser    string            // unshare(CLONE_NEWUSER)
	Mount          string            // mount("tmpfs", "/tmp/probe-mnt")
	Sockets        []string          // unix sockets found anywhere in the filesystem
	DockerSockets  map[string]string // connect to well-known engine sockets
	NetInterfaces  []string          // /sys/class/net
	Connect        map[string]string // TCP connects, by address
	ConnectTook    map[string]string
	ProcSysWrite   string // open /proc/sys/kernel/hostname for writing
	RootWrite      string // create /probe-root-write
	Reads          map[string]ReadResult
	Writes         map[string]string
	Forks          ForkResult
	Env            []string
}

// ReadResult is one attempted read.
type ReadResult struct {
	Err  string
	Size int
}

// ForkResult is the pids-limit probe: children started until one failed.
type ForkResult struct {
	Started int
	Err     string
	Errno   string // "EAGAIN" when the kernel refused the fork
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sleeper" {
		// A child of the fork probe: hold a pid until the parent exits.
		_, _ = bufio.NewReader(os.Stdin).ReadByte()
		return
	}
	// Few threads of our own: when the pids limit is reached, a Go runtime
	// that needed a new thread at that moment would die instead of report.
	runtime.GOMAXPROCS(1)
	var connects, reads, writes, skips list
	forks := flag.Int("forks", 0, "start up to N child processes to find the pids limit")
	flag.Var(&connects, "connect", "a host:port to try a TCP connect to (repeatable)")
	flag.Var(&reads, "read", "a file to read (repeatable)")
	flag.Var(&writes, "write", "a file to create (repeatable)")
	flag.Var(&skips, "skip-walk", "a directory the socket search need not walk, such as a large read-only toolchain mount (repeatable); mount points are checked regardless")
	flag.Parse()

	r := Report{
		UID: os.Getuid(), EUID: os.Geteuid(), GID: os.Getgid(),
		Status:        status(),
		DockerSockets: map[string]string{},
		Connect:       map[string]string{},
		ConnectTook:   map[string]string{},
		Reads:         map[string]ReadResult{},
		Writes:        map[string]string{},
		Env:           os.Environ(),
	}
	r.UnshareUser = errString(syscall.Unshare(syscall.CLONE_NEWUSER))
	_ = os.MkdirAll("/tmp/probe-mnt", 0o755)
	r.Mount = errString(syscall.Mount("tmpfs", "/tmp/probe-mnt", "tmpfs", 0, ""))
	r.Sockets = append(mountedSockets(), findSockets(skips)...)
	for _, s := range []string{"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock"} {
		c, err := net.DialTimeout("unix", s, time.Second)
		if err == nil {
			c.Close()
		}
		r.DockerSockets[s] = errString(err)
	}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			r.NetInterfaces = append(r.NetInterfaces, e.Name())
		}
	}
	for _, a := range connects {
		start := time.Now()
		c, err := net.DialTimeout("tcp", a, 3*time.Second)
		if err == nil {
			c.Close()
		}
		r.Connect[a] = errString(err)
		r.ConnectTook[a] = time.Since(start).String()
	}
	if f, err := os.OpenFile("/proc/sys/kernel/hostname", os.O_WRONLY, 0); err != nil {
		r.ProcSysWrite = err.Error()
	} else {
		_, err = f.WriteString("escaped")
		f.Close()
		r.ProcSysWrite = errString(err)
	}
	r.RootWrite = errString(os.WriteFile("/probe-root-write", []byte("x"), 0o644))
	for _, p := range reads {
		b, err := os.ReadFile(p)
		r.Reads[p] = ReadResult{Err: errString(err), Size: len(b)}
	}
	for _, p := range writes {
		r.Writes[p] = errString(os.WriteFile(p, []byte("probe"), 0o644))
	}
	if *forks > 0 {
		r.Forks = forkUntilRefused(*forks)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func status() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		out["error"] = err.Error()
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb", "NoNewPrivs", "Seccomp":
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// mountedSockets checks every mount point: a socket bind-mounted into the
// container (the way the Docker socket is usually handed in) is one, under
// whatever name.
func mountedSockets() []string {
	var out []string
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"cannot read mountinfo: " + err.Error()}
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := strings.ReplaceAll(f[4], "\\040", " ")
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
	}
	return out
}

// findSockets walks the visible filesystem (not /proc, /sys or skip) for
// unix sockets left in ordinary directories.
func findSockets(skip []string) []string {
	var out []string
	skipped := map[string]bool{"/proc": true, "/sys": true}
	for _, s := range skip {
		skipped[filepath.Clean(s)] = true
	}
	_ = filepath.WalkDir("/", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && skipped[p] {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// forkUntilRefused starts children that block until this process exits,
// up to max, and reports where the kernel said no. The children are
// sleep(1) when the container has one (one pid each), else this binary.
func forkUntilRefused(max int) ForkResult {
	var res ForkResult
	var kids []*exec.Cmd
	defer func() {
		for _, k := range kids {
			_ = k.Process.Kill()
			_ = k.Wait()
		}
	}()
	for i := 0; i < max; i++ {
		c := exec.Command("/proc/self/exe", "sleeper")
		if sleep, err := exec.LookPath("sleep"); err == nil {
			c = exec.Command(sleep, "600")
		}
		stdin, err := c.StdinPipe()
		if err == nil {
			err = c.Start()
		}
		if err != nil {
			res.Err = err.Error()
			if errors.Is(err, syscall.EAGAIN) {
				res.Errno = "EAGAIN"
			}
			return res
		}
		_ = stdin // held open so the child keeps waiting
		kids = append(kids, c)
		res.Started++
	}
	return res
}
