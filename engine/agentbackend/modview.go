package agentbackend

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/sandbox/gotool"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// moduleView is the module cache a task's containers see: the versions the
// base commit's go.sum lists and those the user approved, linked from the
// host's module cache into a directory of bcode's scratch space
// (gotool.ModuleView) and mounted read-only. Every other module of the
// host's cache, another project's private one included, is absent.
type moduleView struct {
	mu  sync.Mutex
	dir string
	tc  *gotool.Toolchain
}

// newModuleView makes the view of sums. Versions the host cache lacks are
// left out; the go command inside names them (docker.ExplainOffline).
func newModuleView(ctx context.Context, sums map[module.Version]gotool.Sum) (*moduleView, error) {
	tc, err := gotool.Shared(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := scratch.MkdirTemp("bcode-modview-*")
	if err != nil {
		return nil, fmt.Errorf("agentbackend: the module view: %w", err)
	}
	v := &moduleView{dir: dir, tc: tc}
	if err := v.add(sums); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return v, nil
}

// add links more versions into the view (a module the user approved and
// the host just fetched); a running container sees them at once.
func (v *moduleView) add(sums map[module.Version]gotool.Sum) error {
	if v == nil || len(sums) == 0 {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, err := v.tc.ModuleView(v.dir, sums); err != nil {
		return fmt.Errorf("agentbackend: the module view: %w", err)
	}
	return nil
}

// Close removes the view (links only: the host cache keeps its files).
func (v *moduleView) Close() error {
	if v == nil {
		return nil
	}
	return os.RemoveAll(v.dir)
}

// vouched is what the task's containers may see: the base's go.sum, and
// each approved version with its sums from the worktree's go.sum when it
// has them (zip and go.mod both, otherwise).
func vouched(base map[module.Version]gotool.Sum, approved map[module.Version]bool, head map[module.Version]gotool.Sum) map[module.Version]gotool.Sum {
	out := maps.Clone(base)
	if out == nil {
		out = map[module.Version]gotool.Sum{}
	}
	for v := range approved {
		if _, ok := out[v]; !ok {
			out[v] = head[v]
		}
	}
	return out
}
