package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

func TestExplainOffline(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"go: example.com/missing@v1.2.3: module lookup disabled by GOPROXY=off\n", "module example.com/missing@v1.2.3 was not prefetched"},
		{"main.go:3:8: cannot find module providing package example.com/pkg/sub: module lookup disabled by GOPROXY=off", "the module providing package example.com/pkg/sub was not prefetched"},
		{"go: finding module: module lookup disabled by GOPROXY=off\n", "a module was not prefetched"},
		{"go: downloading example.com/np v1.0.0\nmain.go:3:8: mkdir /root/go/pkg/mod/cache/download/example.com: read-only file system\n", "module example.com/np@v1.0.0 was not prefetched"},
		{"x.go:1:1: open /m/cache/download/golang.org/x/y/@v/v0.1.0.lock: read-only file system\n", "module golang.org/x/y was not prefetched"},
	} {
		got := string(ExplainOffline([]byte(c.in)))
		if !strings.Contains(got, c.want) || !strings.Contains(got, "GOPROXY=off") || !strings.Contains(got, "go mod download") {
			t.Errorf("ExplainOffline(%q) = %q, want it to say %q, why and what to do", c.in, got, c.want)
		}
		if strings.Count(got, "\n") != strings.Count(c.in, "\n") {
			t.Errorf("ExplainOffline(%q) changed the line count: %q", c.in, got)
		}
	}
	plain := []byte("ok  \texample.com/x\t0.01s\n")
	if got := ExplainOffline(plain); string(got) != string(plain) {
		t.Errorf("output without the phrase changed: %q", got)
	}
	// The first line is kept as it was.
	in := "line one\ngo: a/b@v1.0.0: module lookup disabled by GOPROXY=off\n"
	if got := string(ExplainOffline([]byte(in))); !strings.HasPrefix(got, "line one\nbcode sandbox: module a/b@v1.0.0") {
		t.Errorf("got %q", got)
	}
}

// TestGoOffline runs the real go command inside the sandbox: a module
// whose dependency was prefetched on the host resolves offline, and one whose
// dependency was not fails with a message that names it and says why.
func TestGoOffline(t *testing.T) {
	requireDocker(t)
	g, err := HostGoEnv(context.Background())
	if err != nil {
		t.Skip("needs go on PATH (https://go.dev/dl):", err)
	}
	wt := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(wt, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good/go.mod", "module example.com/good\n\ngo 1.22\n\nrequire github.com/google/uuid v1.6.0\n")
	write("good/id.go", "package good\n\nimport \"github.com/google/uuid\"\n\nfunc New() string { return uuid.NewString() }\n")
	write("good/id_test.go", "package good\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) {\n\tif len(New()) != 36 {\n\t\tt.Fatal(New())\n\t}\n}\n")
	write("bad/go.mod", "module example.com/bad\n\ngo 1.22\n\nrequire example.com/notprefetched v1.0.0\n")
	write("bad/main.go", "package main\n\nimport _ \"example.com/notprefetched\"\n\nfunc main() {}\n")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// On the host, with the user's proxy settings, the way the task's
	// prefetch fetches (gotool.Toolchain.Fetch): the dependency lands in
	// the module cache the container sees read-only.
	uuid := module.Version{Path: "github.com/google/uuid", Version: "v1.6.0"}
	tc, err := gotool.Resolve(ctx)
	if err != nil {
		t.Skip("needs go on PATH (https://go.dev/dl):", err)
	}
	if _, err := tc.Fetch(ctx, []module.Version{uuid}, nil, gotool.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	// The container sees a view holding that module alone, never the
	// host's whole cache.
	view := filepath.Join(t.TempDir(), "modview")
	if missing, err := tc.ModuleView(view, map[module.Version]gotool.Sum{uuid: {}}); err != nil || len(missing) > 0 {
		t.Fatalf("module view: missing %v, %v", missing, err)
	}
	r := newTestRunner(t, wt, func(c *Config) { c.Go = g; c.ModCache = view })

	// go list resolves every module and reads every source file of the
	// package and its tests without compiling the standard library, which
	// with the sandbox's cold, private GOCACHE takes minutes on a loaded
	// two-core machine (docs/sandbox.md).
	res, err := r.Run(ctx, sandbox.Command{Dir: filepath.Join(wt, "good"), Args: []string{"go", "list", "-deps", "-test", "./..."}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "github.com/google/uuid\n") {
		t.Fatalf("go list of the prefetched module: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}

	res, err = r.Run(ctx, sandbox.Command{Dir: filepath.Join(wt, "bad"), Args: []string{"go", "build", "./..."}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stderr)
	if res.ExitCode == 0 || !strings.Contains(out, "module example.com/notprefetched@v1.0.0 was not prefetched") || !strings.Contains(out, "no network") {
		t.Fatalf("go build with a missing dependency: exit %d, stderr %q", res.ExitCode, out)
	}
}

// TestGoTestWithSeededCache runs a real `go test` inside the sandbox with
// the build cache served read-through by GOCACHEPROG from a seed, here the
// host's own GOCACHE so the test stays fast (production seeds a cache of
// its own in a container: agentbackend's WarmSeed). The sandbox writes only to its tmpfs.
func TestGoTestWithSeededCache(t *testing.T) {
	requireDocker(t)
	g, err := HostGoEnv(context.Background())
	if err != nil || g.GOCACHE == "" {
		t.Skip("needs go on PATH (https://go.dev/dl):", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	for rel, body := range map[string]string{
		"go.mod":       "module example.com/seeded\n\ngo 1.22\n",
		"calc.go":      "package seeded\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go": "package seeded\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(Add(2, 2))\n\t}\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(wt, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Make sure the seed has this package's dependencies (the standard
	// library's testing closure): the test's own module, compiled on the
	// host without running it.
	warm := exec.CommandContext(ctx, "go", "test", "-c", "-o", t.TempDir(), "./...")
	warm.Dir, warm.Env = wt, append(os.Environ(), "GOCACHE="+g.GOCACHE)
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("warming the seed: %v\n%s", err, out)
	}
	r := newTestRunner(t, wt, func(c *Config) {
		c.Go = g
		c.GoCacheSeed = g.GOCACHE
		c.GoCacheProg = []string{exe, "-bcode-gocacheprog"}
	})
	res, err := r.Run(ctx, sandbox.Command{Args: []string{"go", "test", "-count=1", "./..."}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("go test inside the sandbox with a seeded cache: %v", res.Duration)
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "ok  \texample.com/seeded") {
		t.Fatalf("exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The seed is read-only to the sandbox: its writes went to the tmpfs.
	res, err = r.Run(ctx, sandbox.Command{Args: []string{"sh", "-c", "touch " + seedTarget + "/poison"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "Read-only file system") {
		t.Errorf("writing the seed: exit %d, %s", res.ExitCode, res.Stderr)
	}
}

// TestPytestInSandbox runs the system Python's pytest inside the sandbox,
// as the gate does for Python repositories: the host's packages are there,
// read-only, and the run needs no network.
func TestPytestInSandbox(t *testing.T) {
	requireDocker(t)
	testenv.SystemPytest(t)
	wt := t.TempDir()
	if err := os.WriteFile(filepath.Join(wt, "test_calc.py"), []byte("def test_add():\n    assert 1 + 1 == 2\n\ndef test_fails():\n    assert 1 + 1 == 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(t, wt, nil)
	res, err := r.Run(context.Background(), sandbox.Command{Args: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || !strings.Contains(string(res.Stdout), "1 failed, 1 passed") {
		t.Errorf("pytest: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}
