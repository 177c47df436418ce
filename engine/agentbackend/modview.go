package agentbackend

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
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
	mu      sync.Mutex
	dir     string
	tc      *gotool.Toolchain
	shared  bool // one of sharedViews: holds one set, removed with the process's scratch
	missing int  // versions of its set the host cache lacked when last linked
}

// sharedViews are the gate's views of this process, by their module set:
// a task's checks all see the same set, and linking a large go.sum's trees
// takes seconds, so each set is linked once. They never grow (add is for
// the attempt's own view), so sharing one is sharing a fixed set; versions
// of the set the host fetched since are linked in on the next use.
var sharedViews = struct {
	sync.Mutex
	m map[[sha256.Size]byte]*moduleView
}{m: map[[sha256.Size]byte]*moduleView{}}

// sharedModuleView is the process's view of sums, made on first use.
func sharedModuleView(ctx context.Context, sums map[module.Version]gotool.Sum) (*moduleView, error) {
	h := sha256.New()
	for _, v := range slices.SortedFunc(maps.Keys(sums), func(a, b module.Version) int {
		return strings.Compare(gotool.String(a), gotool.String(b))
	}) {
		fmt.Fprintf(h, "%s %s %s\n", gotool.String(v), sums[v].Zip, sums[v].GoMod)
	}
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	sharedViews.Lock()
	defer sharedViews.Unlock()
	if v := sharedViews.m[key]; v != nil {
		if _, err := os.Stat(v.dir); err == nil {
			if v.missing > 0 {
				if err := v.link(sums); err != nil {
					return nil, err
				}
			}
			return v, nil
		}
	}
	v, err := newModuleView(ctx, sums)
	if err != nil {
		return nil, err
	}
	v.shared = true
	sharedViews.m[key] = v
	return v, nil
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
	if err := v.link(sums); err != nil {
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
	if v.shared {
		return fmt.Errorf("agentbackend: a shared module view cannot grow")
	}
	return v.link(sums)
}

// link links sums into the view.
func (v *moduleView) link(sums map[module.Version]gotool.Sum) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	missing, err := v.tc.ModuleView(v.dir, sums)
	if err != nil {
		return fmt.Errorf("agentbackend: the module view: %w", err)
	}
	v.missing = len(missing)
	return nil
}

// Close removes the view (links only: the host cache keeps its files).
func (v *moduleView) Close() error {
	if v == nil || v.shared {
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
