package agentbackend

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// prefetcher keeps the host's module cache ahead of the worktree's go.mod:
// the container is offline, so a dependency the agent adds must be fetched
// on the host before the next command or check that builds it. It runs
// `go mod download` at the attempt's start and after each turn that
// changed go.mod or go.sum, never otherwise (it costs a second even when
// nothing is missing).
type prefetcher struct {
	dir   string
	fetch func(ctx context.Context, dir string) error // nil: docker.PrefetchGo
	last  [sha256.Size]byte
	done  bool
}

// refresh fetches when the module files changed since the last fetch. The
// files are read through sandbox.Confined: a go.mod the agent replaced
// with a link to a host file is refused, not followed, and nothing runs.
func (p *prefetcher) refresh(ctx context.Context) error {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := sandbox.ReadFile(p.dir, name, 16<<20)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(h, "%s: none\n", name)
		case err != nil:
			return fmt.Errorf("not prefetching Go modules: %w", err)
		default:
			fmt.Fprintf(h, "%s: %d\n", name, len(b))
			h.Write(b)
		}
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	if p.done && sum == p.last {
		return nil
	}
	fetch := p.fetch
	if fetch == nil {
		fetch = docker.PrefetchGo
	}
	if err := fetch(ctx, p.dir); err != nil {
		return err
	}
	p.last, p.done = sum, true
	return nil
}
