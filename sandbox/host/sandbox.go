package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// Sandbox is the host sandbox.Sandbox. Its confinement is only the working
// directory check: a host process can write wherever the user can. It is
// what `bcode check` verifies the user's own change with, and what tests
// use where Docker is not the point.
type Sandbox struct{}

var _ sandbox.Sandbox = Sandbox{}

// Name implements sandbox.Sandbox.
func (Sandbox) Name() string { return "host" }

// Open implements sandbox.Sandbox; the owner is not recorded anywhere (a
// host process dies with its process group).
func (Sandbox) Open(_ context.Context, dir string, _ sandbox.Owner) (sandbox.ScopedRunner, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("host sandbox: the directory must be absolute, got %q", dir)
	}
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("host sandbox: %s is not a directory: %v", dir, err)
	}
	return &scoped{Runner: New(), dir: dir}, nil
}

// scoped is a host Runner that keeps commands inside one directory.
type scoped struct {
	*Runner
	dir string
}

func (s *scoped) Dir() string  { return s.dir }
func (s *scoped) Close() error { return nil }

func (s *scoped) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	if c.Dir == "" {
		c.Dir = s.dir
	}
	d := filepath.Clean(c.Dir)
	if !filepath.IsAbs(d) || (d != s.dir && !strings.HasPrefix(d, s.dir+string(filepath.Separator))) {
		return sandbox.Result{}, fmt.Errorf("host runner: %w: %q is not inside %s", sandbox.ErrOutsideScope, c.Dir, s.dir)
	}
	return s.Runner.Run(ctx, c)
}
