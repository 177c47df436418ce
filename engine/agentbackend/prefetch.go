package agentbackend

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// ErrModuleNotApproved is returned by a prefetch that left module versions
// unfetched because neither the base nor the user vouched for them.
var ErrModuleNotApproved = errors.New("agentbackend: module versions need the user's approval")

// prefetcher keeps the host's module cache ahead of the worktree's go.mod:
// the container is offline, so a dependency the agent adds must be fetched
// on the host before the next command or check that builds it. It looks at
// the start of the attempt and after each turn that changed go.mod or
// go.sum (or after the user approved a module), never otherwise.
//
// It never runs the go command over the worktree. It parses the module
// files itself (through sandbox.Confined: a go.mod the agent replaced with
// a link to a host file is refused), and fetches, through
// gotool.Toolchain.Fetch in an empty directory, only the module versions
// the base commit's go.sum lists or the user approved. Every other version
// the files name becomes one module.approval_needed event, and no request
// (whether or not the host's cache has it: the container sees only the
// task's module view).
type prefetcher struct {
	dir        string // the worktree
	repo, base string // where the base's go.sum comes from
	task       string
	attempt    int64
	lease      *engine.Lease
	led        ModuleLedger      // nil: no approvals, no events (tests)
	tc         *gotool.Toolchain // nil: gotool.Shared
	// fetch downloads the given versions (nil: gotool's Fetch with the
	// user's proxy settings).
	fetch func(ctx context.Context, pairs []module.Version, sums map[module.Version]gotool.Sum) error

	// view, when set, is the task's module view: what is fetched for the
	// task is linked into it, so the running container sees it.
	view *moduleView

	baseSums map[module.Version]gotool.Sum
	log      moduleLog // the task's module events read so far
	last     [sha256.Size]byte
	done     bool

	mu       sync.Mutex
	approved map[module.Version]bool // as of the last refresh
}

// approvedNow is what the user had approved at the last refresh (the
// gate's containers see those modules too).
func (p *prefetcher) approvedNow() map[module.Version]bool {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.approved
}

// refresh fetches what changed module files need and may be fetched.
func (p *prefetcher) refresh(ctx context.Context) error {
	h := sha256.New()
	files := map[string][]byte{}
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
			files[name] = b
		}
	}
	if p.led != nil {
		if err := p.log.update(ctx, p.led, p.task); err != nil {
			return fmt.Errorf("not prefetching Go modules: %w", err)
		}
	}
	approved, asked := p.log.approved, p.log.asked
	for _, v := range sortedVersions(approved) {
		fmt.Fprintf(h, "approved %s\n", gotool.String(v))
	}
	p.mu.Lock()
	p.approved = approved
	p.mu.Unlock()
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	if p.done && sum == p.last {
		return nil
	}
	if files["go.mod"] == nil {
		p.last, p.done = sum, true
		return nil
	}
	wanted, err := gotool.Wanted(files["go.mod"], files["go.sum"])
	if err != nil {
		return fmt.Errorf("not prefetching Go modules: %w", err)
	}
	if p.baseSums == nil {
		if p.baseSums, err = BaseSums(ctx, p.repo, p.base); err != nil {
			return fmt.Errorf("not prefetching Go modules: %w", err)
		}
	}
	tc := p.tc
	if tc == nil {
		if tc, err = gotool.Shared(ctx); err != nil {
			return fmt.Errorf("not prefetching Go modules: %w", err)
		}
	}
	headSums := gotool.ParseSum(files["go.sum"])
	var fetch, ask []module.Version
	for _, v := range wanted {
		if _, known := p.baseSums[v]; known || approved[v] {
			fetch = append(fetch, v)
			continue
		}
		// In the host's cache or not, the container sees only the task's
		// module view: an unvouched version is the user's to approve.
		ask = append(ask, v)
	}
	var errs []error
	if len(fetch) > 0 {
		f := p.fetch
		if f == nil {
			f = func(ctx context.Context, pairs []module.Version, sums map[module.Version]gotool.Sum) error {
				_, err := tc.Fetch(ctx, pairs, sums, gotool.DefaultLimits)
				return err
			}
		}
		if err := f(ctx, fetch, p.baseSums); err != nil {
			return fmt.Errorf("prefetching Go modules: %w", err)
		}
		if err := p.view.add(vouched(p.baseSums, approved, headSums)); err != nil {
			return err
		}
	}
	for _, v := range ask {
		if asked[v] || p.led == nil {
			continue
		}
		data, _ := json.Marshal(ModuleEvent{Module: gotool.String(v), Why: "not in the base commit's go.sum; approve with: bcode task approve-module " + p.task + " " + gotool.String(v)})
		if _, err := p.led.Append(ctx, p.lease, &engine.Event{TaskID: p.task, Attempt: p.attempt, Kind: EventModuleApprovalNeeded, Data: data}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(ask) > 0 {
		names := make([]string, len(ask))
		for i, v := range ask {
			names[i] = gotool.String(v)
		}
		errs = append(errs, fmt.Errorf("%w: %s (bcode task approve-module %s MOD@VER)", ErrModuleNotApproved, strings.Join(names, ", "), p.task))
	}
	p.last, p.done = sum, true
	return errors.Join(errs...)
}

func sortedVersions(set map[module.Version]bool) []module.Version {
	out := make([]module.Version, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b module.Version) int {
		return strings.Compare(gotool.String(a), gotool.String(b))
	})
	return out
}
