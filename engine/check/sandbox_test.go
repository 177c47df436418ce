package check_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/docker/dockertest"
	"github.com/bcode-dev/bcode/verify"
)

// auditSandbox wraps a Sandbox and records every command its runners run,
// so a test can prove the gate keeps to the directory it opened: the
// working directory (the inner runner enforces it too) and every argument
// that names a temporary file. A path outside the scratch directory would
// not exist inside a container.
type auditSandbox struct {
	inner sandbox.Sandbox

	mu       sync.Mutex
	opened   []string
	commands int
	escapes  []string
}

func (a *auditSandbox) Name() string { return a.inner.Name() }

func (a *auditSandbox) Open(ctx context.Context, dir string, o sandbox.Owner) (sandbox.ScopedRunner, error) {
	r, err := a.inner.Open(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.opened = append(a.opened, dir)
	a.mu.Unlock()
	return &auditRunner{ScopedRunner: r, a: a}, nil
}

type auditRunner struct {
	sandbox.ScopedRunner
	a *auditSandbox
}

func (r *auditRunner) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	scope := r.Dir()
	tmp := filepath.Clean(os.TempDir())
	inside := func(p string) bool { return p == scope || strings.HasPrefix(p, scope+"/") }
	var bad []string
	if c.Dir != "" && !inside(filepath.Clean(c.Dir)) {
		bad = append(bad, "dir "+c.Dir)
	}
	for _, arg := range append(append([]string{}, c.Args...), c.Env...) {
		_, v, _ := strings.Cut(arg, "=") // -o=PATH, -overlay=PATH, KEY=PATH
		for _, p := range []string{arg, v} {
			if strings.HasPrefix(p, tmp+"/") && !inside(filepath.Clean(p)) {
				bad = append(bad, p)
			}
		}
	}
	r.a.mu.Lock()
	r.a.commands++
	for _, b := range bad {
		r.a.escapes = append(r.a.escapes, strings.Join(c.Args, " ")+": "+b)
	}
	r.a.mu.Unlock()
	return r.ScopedRunner.Run(ctx, c)
}

// verify fails t when a command left the scratch directory, or when the
// scratch directory outlived the check.
func (a *auditSandbox) verify(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.escapes {
		t.Errorf("a gate command reaches outside its sandbox directory: %s", e)
	}
	for _, d := range a.opened {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the scratch directory %s outlived the check", d)
		}
	}
}

// TestPythonCasesInDocker: the labelled suite's Python cases, judged with
// every test run in the Docker sandbox, get the verdicts they get on the
// host. (The Go cases run in the sandbox in engine/agentbackend's end to
// end test and `bcode check --sandbox docker`'s, with a seeded build cache;
// without one each container compiles the standard library afresh.)
func TestPythonCasesInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pytest in containers; skipped with -short")
	}
	testenv.SystemPytest(t)
	ctx := context.Background()
	e := dockertest.Connect(t)
	const image = "bcode-sandbox:checktest-py"
	dockertest.Image(t, e, image)

	// A spread of verdicts: verified, green, failed, tampered.
	names := []string{"py-correct-fix", "py-class-method", "py-passes-on-base", "py-incorrect-fix", "py-skip-decorator", "py-breaks-other-test"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := suiteCase(t, name)
			dir := t.TempDir()
			if err := c.Build(ctx, dir); err != nil {
				t.Fatalf("building the repository: %v", err)
			}
			base, head := c.Revisions()
			audit := &auditSandbox{inner: docker.Sandbox{Template: docker.Config{Image: image}}}
			start := time.Now()
			rep, err := check.Run(ctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: head, Sandbox: audit, NoEvidence: true})
			if rep == nil {
				t.Fatalf("no report: %v", err)
			}
			t.Logf("%s in %.1fs (%d commands in containers)", rep.Verdict, time.Since(start).Seconds(), audit.commands)
			audit.verify(t)
			if rep.Runner != "docker" || audit.commands == 0 {
				t.Errorf("runner %q with %d commands, want the docker sandbox", rep.Runner, audit.commands)
			}
			if rep.Verdict != c.Verdict {
				t.Errorf("in Docker: verdict %s, label %s\n%s", rep.Verdict, c.Verdict, describe(rep))
			}
			if c.Verdict == verify.Verified && len(rep.Credited()) == 0 {
				t.Error("labelled verified but no test was credited")
			}
		})
	}
}
