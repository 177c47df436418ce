package docker

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// probeReport mirrors probe.Report (the probe is a main package).
type probeReport struct {
	UID, EUID, GID int
	Status         map[string]string
	UnshareUser    string
	Mount          string
	Sockets        []string
	DockerSockets  map[string]string
	NetInterfaces  []string
	Connect        map[string]string
	ConnectTook    map[string]string
	ProcSysWrite   string
	RootWrite      string
	Reads          map[string]struct {
		Err  string
		Size int
	}
	Writes map[string]string
	Forks  struct {
		Started int
		Err     string
		Errno   string
	}
	Env []string
}

// buildProbe compiles the escape probe as a static binary into a fresh
// directory, which the test mounts read-only into the container.
func buildProbe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "probe"), "./probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gitWorktree makes a repository and a linked worktree of it, whose .git is
// a file pointing into the repository: the layout an attempt runs in.
func gitWorktree(t *testing.T) (repo, wt string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git (apt-get install git)")
	}
	root := t.TempDir()
	repo, wt = filepath.Join(root, "repo"), filepath.Join(root, "wt")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", ".")
	git(repo, "commit", "-q", "-m", "init")
	git(repo, "worktree", "add", "-q", "-b", "attempt", wt)
	return repo, wt
}

// TestEscapeProbe runs the probe inside the sandbox and asserts, from what
// it saw, that each way out is closed.
func TestEscapeProbe(t *testing.T) {
	requireDocker(t)
	t.Setenv("BCODE_PROBE_HOST_SECRET", "host-secret-value-93b1")
	start := time.Now()
	probeDir := buildProbe(t)
	t.Logf("probe built in %v", time.Since(start))
	_, wt := gitWorktree(t)

	secrets := []string{".env", ".ENV.production", "deploy/id_rsa", "certs/server.PEM", "tls.key", "KubeConfig",
		"infra/prod.tfstate", "gcp/Service-Account-prod.json", "aws_Credentials.json", ".kube/config"}
	for _, s := range secrets {
		p := filepath.Join(wt, filepath.FromSlash(s))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("SECRET "+s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Links planted by a hostile repository or agent: to a host file that
	// exists, to one outside the worktree, and a directory link out.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "host-only.txt"), []byte("host data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"link":     "/etc/shadow",
		"hostfile": filepath.Join(outside, "host-only.txt"),
		"dirlink":  outside,
	} {
		if err := os.Symlink(target, filepath.Join(wt, name)); err != nil {
			t.Fatal(err)
		}
	}

	// A listener on the host's loopback: the container must not reach it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	hostLoopback := ln.Addr().String()
	// 10.255.255.1 is never contacted: with only lo in the container there
	// is no route, so connect fails before any packet is sent.
	const routable = "10.255.255.1:9"

	const pids = 64
	r := newTestRunner(t, wt, func(c *Config) {
		g, err := HostGoEnv(context.Background())
		if err != nil {
			t.Skip("needs go on PATH:", err)
		}
		c.Go = g
		c.Toolchains = append(HostToolchains(g), Mount{Source: probeDir, Target: "/opt/probe"})
		c.PidsLimit = pids
	})

	args := []string{"/opt/probe/probe", "-connect", hostLoopback, "-connect", routable, "-forks", strconv.Itoa(4 * pids),
		"-read", "README.md", "-read", ".git", "-read", "link", "-read", "hostfile", "-read", "dirlink/host-only.txt",
		"-write", "made-by-probe.txt", "-write", "/usr/probe-write", "-write", ".env", "-write", filepath.Join(hostHome(), "probe-write")}
	for _, s := range secrets {
		args = append(args, "-read", s)
	}
	// The socket search walks everything but the big read-only toolchain
	// trees; every mount point is checked for being a socket regardless.
	for _, m := range r.cfg.Toolchains {
		args = append(args, "-skip-walk", m.target())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, sandbox.Command{Dir: wt, Args: args, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe ran in %v", res.Duration)
	if res.ExitCode != 0 {
		t.Fatalf("probe exited %d: %s", res.ExitCode, res.Stderr)
	}
	var rep probeReport
	if err := json.Unmarshal(res.Stdout, &rep); err != nil {
		t.Fatalf("probe output: %v\n%s", err, res.Stdout)
	}

	t.Run("Capabilities", func(t *testing.T) {
		for _, k := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
			if v := rep.Status[k]; strings.Trim(v, "0") != "" || v == "" {
				t.Errorf("%s = %q, want all zero", k, v)
			}
		}
	})
	t.Run("NoNewPrivs", func(t *testing.T) {
		if rep.Status["NoNewPrivs"] != "1" {
			t.Errorf("NoNewPrivs = %q, want 1", rep.Status["NoNewPrivs"])
		}
	})
	t.Run("Seccomp", func(t *testing.T) {
		if rep.Status["Seccomp"] != "2" {
			t.Errorf("Seccomp = %q, want 2 (filtering)", rep.Status["Seccomp"])
		}
	})
	t.Run("NonRoot", func(t *testing.T) {
		if rep.UID == 0 || rep.EUID == 0 || rep.GID == 0 {
			t.Errorf("running as uid %d euid %d gid %d", rep.UID, rep.EUID, rep.GID)
		}
	})
	t.Run("UnshareAndMountRefused", func(t *testing.T) {
		if rep.UnshareUser == "" {
			t.Error("unshare(CLONE_NEWUSER) succeeded")
		}
		if rep.Mount == "" {
			t.Error("mount(tmpfs) succeeded")
		}
	})
	t.Run("NoDockerSocket", func(t *testing.T) {
		if len(rep.Sockets) > 0 {
			t.Errorf("unix sockets visible in the container: %v", rep.Sockets)
		}
		for s, e := range rep.DockerSockets {
			if e == "" {
				t.Errorf("connected to %s", s)
			}
		}
	})
	t.Run("OnlyLoopback", func(t *testing.T) {
		if strings.Join(rep.NetInterfaces, ",") != "lo" {
			t.Errorf("network interfaces %v, want only lo", rep.NetInterfaces)
		}
	})
	t.Run("OutboundConnectFails", func(t *testing.T) {
		if rep.Connect[hostLoopback] == "" || accepted.Load() != 0 {
			t.Errorf("the host's loopback listener %s was reached (err %q, accepted %d)", hostLoopback, rep.Connect[hostLoopback], accepted.Load())
		}
		e := rep.Connect[routable]
		if !strings.Contains(e, "network is unreachable") {
			t.Errorf("connect %s: %q, want ENETUNREACH", routable, e)
		}
		if d, err := time.ParseDuration(rep.ConnectTook[routable]); err != nil || d > time.Second {
			t.Errorf("connect %s took %s: it must fail at once, without a route", routable, rep.ConnectTook[routable])
		}
	})
	t.Run("PidsLimit", func(t *testing.T) {
		if rep.Forks.Errno != "EAGAIN" || rep.Forks.Started >= pids {
			t.Errorf("started %d children of a %d pids limit, last error %q (%s)", rep.Forks.Started, pids, rep.Forks.Err, rep.Forks.Errno)
		}
	})
	t.Run("ProcSysReadOnly", func(t *testing.T) {
		if rep.ProcSysWrite == "" {
			t.Error("wrote /proc/sys/kernel/hostname")
		}
	})
	t.Run("RootReadOnly", func(t *testing.T) {
		if !strings.Contains(rep.RootWrite, "read-only file system") {
			t.Errorf("creating a file in /: %q, want a read-only file system", rep.RootWrite)
		}
		if e := rep.Writes["/usr/probe-write"]; !strings.Contains(e, "read-only file system") {
			t.Errorf("writing the /usr toolchain mount: %q, want read-only", e)
		}
	})
	t.Run("WorktreeWritable", func(t *testing.T) {
		if e := rep.Writes["made-by-probe.txt"]; e != "" {
			t.Errorf("writing the worktree: %s", e)
		}
		if b, err := os.ReadFile(filepath.Join(wt, "made-by-probe.txt")); err != nil || string(b) != "probe" {
			t.Errorf("the host reads %q, %v", b, err)
		}
	})
	t.Run("SecretsMasked", func(t *testing.T) {
		if rr := rep.Reads["README.md"]; rr.Err != "" || rr.Size == 0 {
			t.Errorf("README.md (not a secret) read as %+v", rr)
		}
		for _, s := range append(secrets, ".git") {
			rr, ok := rep.Reads[s]
			if !ok || rr.Size != 0 {
				t.Errorf("%s: read %+v inside the sandbox, want empty", s, rr)
			}
		}
		if e := rep.Writes[".env"]; e == "" {
			t.Error("overwrote the masked .env")
		}
		// The host's file is untouched.
		if b, _ := os.ReadFile(filepath.Join(wt, ".env")); string(b) != "SECRET .env\n" {
			t.Errorf("host .env now %q", b)
		}
	})
	t.Run("PlantedLinksFindNothingOfTheHost", func(t *testing.T) {
		for _, name := range []string{"link", "hostfile", "dirlink/host-only.txt"} {
			if rr := rep.Reads[name]; rr.Err == "" {
				t.Errorf("inside: reading %s through a planted link returned %d bytes", name, rr.Size)
			}
		}
		if e := rep.Writes[filepath.Join(hostHome(), "probe-write")]; e == "" {
			t.Error("wrote into the path of the host's home directory")
		}
	})
	t.Run("HostReadsStayConfined", func(t *testing.T) {
		for _, name := range []string{"link", "hostfile", "dirlink/host-only.txt"} {
			b, err := sandbox.ReadFile(wt, name, 0)
			if err == nil {
				t.Errorf("sandbox.ReadFile(%s) read %q outside the worktree", name, b)
			}
		}
		if _, err := sandbox.ReadFile(wt, "link", 1<<20); !errors.Is(err, sandbox.ErrSymlink) {
			t.Errorf("sandbox.ReadFile(link): %v, want ErrSymlink", err)
		}
		if b, err := sandbox.ReadFile(wt, "README.md", 1<<20); err != nil || string(b) != "# readme\n" {
			t.Errorf("sandbox.ReadFile(README.md) = %q, %v", b, err)
		}
	})
	t.Run("EnvScrubbed", func(t *testing.T) {
		for _, kv := range rep.Env {
			if strings.Contains(kv, "host-secret-value") || strings.HasPrefix(kv, "BCODE_PROBE_HOST_SECRET=") {
				t.Errorf("the host's environment leaked: %s", kv)
			}
		}
	})
}

// hostHome is the host user's home directory path, which the
// container must not be able to write (it is not mounted).
func hostHome() string {
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return "/root"
	}
	return h
}
