package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/versions"

	"github.com/bcode-dev/bcode/sandbox"
)

func TestIsSecretPath(t *testing.T) {
	secret := []string{".env", ".ENV", ".env.local", "app/.Env.production", "id_rsa", "keys/ID_ED25519", "certs/server.pem",
		"tls.KEY", "kubeconfig", "ops/KubeConfig.yaml", "infra/prod.tfstate", "infra/prod.tfstate.backup",
		"gcp-credentials.json", "My_Credentials_prod.JSON", "service-account-prod.json", "Service-Account.json",
		"home/.kube/config", ".netrc", ".git-credentials", "x/.ssh/authorized_keys", "store.p12"}
	plain := []string{"README.md", "main.go", "environment.go", "env/settings.go", "keyboard.go", "docs/keys.md",
		"credentials.go", "service.json", "kube/config.go", "pem.go", "config"}
	for _, p := range secret {
		if !IsSecretPath(p) {
			t.Errorf("IsSecretPath(%q) = false, want true", p)
		}
	}
	for _, p := range plain {
		if IsSecretPath(p) {
			t.Errorf("IsSecretPath(%q) = true, want false", p)
		}
	}
}

func TestScanMasks(t *testing.T) {
	wt := t.TempDir()
	for _, f := range []string{".git", "README.md", ".env", "deep/dir/id_rsa", "sub/.git/config", "secrets.pem/inner.txt", "ok/main.go"} {
		p := filepath.Join(wt, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link named like a secret is not masked (it resolves inside the
	// container), and nothing below a link is walked.
	if err := os.Symlink("/etc", filepath.Join(wt, "linked.key")); err != nil {
		t.Fatal(err)
	}
	ms, err := scanMasks(wt)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		s := m.rel
		if m.dir {
			s += "/"
		}
		got = append(got, s)
	}
	sort.Strings(got)
	want := []string{".env", ".git", "deep/dir/id_rsa", "secrets.pem/", "sub/.git/"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("masks %q, want %q", got, want)
	}
	if _, err := scanMasks(filepath.Join(wt, "missing")); err == nil {
		t.Error("scanning a missing worktree: no error")
	}
}

func TestRootFS(t *testing.T) {
	var buf bytes.Buffer
	if err := RootFS(&buf, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	files := map[string]*tar.Header{}
	bodies := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		b, _ := io.ReadAll(tr)
		bodies[h.Name] = string(b)
	}
	for _, want := range []string{"etc/passwd", "etc/group", "tmp/", "home/sandbox/", "usr/", "sbin/"} {
		if files[want] == nil {
			t.Errorf("rootfs lacks %s", want)
		}
	}
	if h := files["home/sandbox/"]; h != nil && (h.Uid != SandboxUID || h.Mode != 0o700) {
		t.Errorf("home/sandbox owned by %d mode %o", h.Uid, h.Mode)
	}
	if h := files["tmp/"]; h != nil && h.Mode != 0o1777 {
		t.Errorf("tmp mode %o", h.Mode)
	}
	if !strings.Contains(bodies["etc/passwd"], "sandbox:x:65532:65532:") || !strings.Contains(bodies["etc/passwd"], ":1000:1000:") {
		t.Errorf("passwd:\n%s", bodies["etc/passwd"])
	}
	for name, h := range files {
		if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 {
			t.Errorf("%s is executable: the rootfs ships no programs", name)
		}
		if h.Typeflag == tar.TypeSymlink && !strings.HasPrefix(h.Linkname, "usr/") {
			t.Errorf("%s -> %s: only merged-/usr links belong in the rootfs", name, h.Linkname)
		}
	}
	// Stable bytes: the same input gives the same layer.
	var again bytes.Buffer
	if err := RootFS(&again, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	_ = RootFS(&first, 1000, 1000)
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Error("RootFS is not deterministic")
	}
}

func TestRefuseSensitive(t *testing.T) {
	home, _ := os.UserHomeDir()
	for _, p := range []string{"/", "/etc", "/root", "/home", "/var/run", "/run", home, home + "/.ssh", "/var/run/docker.sock", "/x/.docker", "/srv/.aws"} {
		if err := refuseSensitive(p); err == nil {
			t.Errorf("mounting %s was allowed", p)
		}
	}
	for _, p := range []string{"/usr", "/usr/local/go", "/opt/toolchains", home + "/go/pkg/mod"} {
		if err := refuseSensitive(p); err != nil {
			t.Errorf("mounting %s: %v", p, err)
		}
	}
}

func TestMergeEnvAndBase(t *testing.T) {
	env := mergeEnv(baseEnv(GoEnv{GOROOT: "/usr/local/go"}, "", "/c", "/m"), []string{"GOFLAGS=-mod=readonly", "X=1"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	for k, v := range map[string]string{"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly", "X": "1",
		"GOMODCACHE": "/m", "GOCACHE": "/c", "HOME": Home, "PATH": "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestGrantWriteStaysInTheTreeUnderSwaps: while GrantWrite walks, a
// directory of the tree is swapped, over and over, for a link to a
// directory outside it (as a test running in a parallel container can).
// The grant is written through a handle opened beneath the tree, so
// nothing outside it ever gets the sandbox user's entry.
func TestGrantWriteStaysInTheTreeUnderSwaps(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(dir, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(dir, "d", "f"), filepath.Join(outside, "f")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := GrantWrite(dir, 4243); err != nil {
		if strings.Contains(err.Error(), "does not support POSIX ACLs") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d := filepath.Join(dir, "d")
		for i := 0; !done.Load(); i++ {
			if i%2 == 0 {
				os.RemoveAll(d)
				os.Symlink(outside, d)
			} else {
				os.Remove(d)
				os.Mkdir(d, 0o755)
				os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644)
			}
		}
	}()
	for i := 0; i < 300; i++ {
		_ = GrantWrite(dir, 4243) // errors from a swapped-away entry are fine
	}
	// The control: the same grant by path, as GrantWrite made it before,
	// under the same swapper (logged, not asserted: a race).
	control := false
	for i := 0; i < 3000 && !control; i++ {
		_ = setACL(filepath.Join(dir, "d", "f"), false, "system.posix_acl_access", 0o644, 4244, 6)
		control = hasACLEntry(filepath.Join(outside, "f"), false, "system.posix_acl_access", 4244, 6)
	}
	t.Logf("control: a grant by path reached outside the tree: %v", control)
	done.Store(true)
	wg.Wait()
	for _, p := range []string{outside, filepath.Join(outside, "f")} {
		if hasACLEntry(p, false, "system.posix_acl_access", 4243, 6) || hasACLEntry(p, false, "system.posix_acl_access", 4243, 7) {
			t.Errorf("%s outside the tree got the sandbox user's entry", p)
		}
	}
}

func TestGrantWriteACL(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a/f.txt", "a/.git/HEAD"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := GrantWrite(dir, 4242); err != nil {
		if strings.Contains(err.Error(), "does not support POSIX ACLs") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	for _, p := range []string{"", "a", "a/f.txt"} {
		if !hasACLEntry(filepath.Join(dir, p), false, "system.posix_acl_access", 4242, 6) {
			t.Errorf("%q: no rw entry for uid 4242", p)
		}
	}
	if !hasACLEntry(filepath.Join(dir, "a"), false, "system.posix_acl_default", 4242, 7) {
		t.Error("a: no default entry")
	}
	if hasACLEntry(filepath.Join(dir, "a/.git/HEAD"), false, "system.posix_acl_access", 4242, 4) {
		t.Error("the git directory was opened to the sandbox user")
	}
	// The owner's bits survive.
	fi, err := os.Stat(filepath.Join(dir, "a/f.txt"))
	if err != nil || fi.Mode().Perm()&0o600 != 0o600 {
		t.Errorf("a/f.txt mode %v, %v", fi.Mode(), err)
	}
}

func TestConnectUnavailable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Connect(ctx)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "dockerd &") {
		t.Fatalf("err = %v, want ErrUnavailable with the fix", err)
	}
}

func TestNewRunnerRejects(t *testing.T) {
	e := requireDocker(t)
	ctx := context.Background()
	wt := t.TempDir()
	for name, cfg := range map[string]Config{
		"relative worktree": {Image: testImage, Worktree: "rel/dir"},
		"missing worktree":  {Image: testImage, Worktree: filepath.Join(wt, "nope")},
		"root user":         {Image: testImage, Worktree: wt, User: "0:0"},
		"bad user":          {Image: testImage, Worktree: wt, User: "sandbox"},
		"home mount":        {Image: testImage, Worktree: wt, Toolchains: []Mount{{Source: "/root"}}},
		"relative mount":    {Image: testImage, Worktree: wt, Toolchains: []Mount{{Source: "usr"}}},
	} {
		if r, err := e.NewRunner(ctx, cfg); err == nil {
			r.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	_, err := e.NewRunner(ctx, Config{Image: "bcode-sandbox:no-such-tag", Worktree: wt})
	if !errors.Is(err, ErrNoImage) || !strings.Contains(err.Error(), "bcode sandbox build") {
		t.Errorf("missing image: %v", err)
	}
	r := newTestRunner(t, wt, nil)
	if _, err := r.Run(ctx, sandbox.Command{Dir: "/etc", Args: []string{"true"}}); !errors.Is(err, sandbox.ErrOutsideScope) {
		t.Errorf("a Dir outside the worktree: %v", err)
	}
}

func TestBuildImageAndVersion(t *testing.T) {
	e := requireDocker(t)
	ctx := context.Background()
	img, err := e.Image(ctx, testImage)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img.ID, "sha256:") || img.Rootfs != rootfsVersion || img.Created.IsZero() {
		t.Errorf("image %+v", img)
	}
	v, err := e.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.APIVersion == "" || v.Negotiated == "" || !versions.LessThanOrEqualTo(v.Negotiated, v.APIVersion) {
		t.Errorf("version %+v: the client must speak at most the engine's API", v)
	}
	if !v.Seccomp {
		t.Errorf("the engine reports no seccomp support: %+v", v)
	}
	t.Logf("engine %s, API %s (min %s), negotiated %s", v.Engine, v.APIVersion, v.MinAPIVersion, v.Negotiated)
}

func TestReap(t *testing.T) {
	e := requireDocker(t)
	ctx := context.Background()
	wt := t.TempDir()
	label := map[string]string{"dev.bcode.attempt": "reap-" + filepath.Base(wt)}
	r := newTestRunner(t, wt, func(c *Config) { c.Labels = label })
	// A command still running when its caller dies leaves its container.
	cc, hc, err := r.spec([]string{"sleep", "300"}, nil, wt, false, false)
	if err != nil {
		t.Fatal(err)
	}
	created, err := e.cli.ContainerCreate(ctx, cc, hc, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Reap(ctx, label)
	if err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want 1", n, err)
	}
	if _, err := e.cli.ContainerInspect(ctx, created.ID); err == nil {
		t.Error("the container is still there")
	}
}

func TestMemoryLimitReported(t *testing.T) {
	r := newTestRunner(t, t.TempDir(), func(c *Config) { c.MemoryBytes = 64 << 20 })
	// 512 MiB of touched memory in a 64 MiB container.
	res, err := r.Run(context.Background(), sandbox.Command{Args: []string{"python3", "-c", "b = bytearray(512 << 20)\nprint(len(b))"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 137 || !strings.Contains(string(res.Stderr), "more than the sandbox's 64 MiB of memory") {
		t.Errorf("exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
}

// A timeout shorter than a container's start-up is still a timeout result,
// not an error, whichever step it cuts short.
func TestTimeoutBeforeStart(t *testing.T) {
	r := newTestRunner(t, t.TempDir(), nil)
	for _, d := range []time.Duration{time.Nanosecond, 50 * time.Millisecond, 300 * time.Millisecond} {
		res, err := r.Run(context.Background(), sandbox.Command{Args: []string{"sleep", "30"}, Timeout: d})
		if err != nil || !res.TimedOut {
			t.Errorf("timeout %v: TimedOut=%v err=%v", d, res.TimedOut, err)
		}
	}
}
