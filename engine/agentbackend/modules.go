package agentbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// The host reaches the network for the agent only for module versions the
// base commit already depends on (a line in its go.sum) or that the user
// approved. Any other module the agent's go.mod or go.sum names is an
// event the user answers (`bcode task approve-module TASK MOD@VER`), never
// a request: a module path is text the agent chose, and a request for it
// carries that text to the proxy.
const (
	// EventModuleApprovalNeeded: the agent's code needs a module version
	// the base does not; nothing was fetched. Data: ModuleEvent.
	EventModuleApprovalNeeded engine.EventKind = "module.approval_needed"
	// EventModuleApproved: the user allowed the host to fetch a module
	// version for the task. Data: ModuleEvent.
	EventModuleApproved engine.EventKind = "module.approved"
)

// ModuleEvent is the data of the module events.
type ModuleEvent struct {
	Module string `json:"module"` // path@version
	Why    string `json:"why,omitempty"`
}

// ModuleLedger is what the module events need of the ledger.
type ModuleLedger interface {
	Append(ctx context.Context, lease *engine.Lease, e *engine.Event) (int64, error)
	Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error)
}

// ParseModule parses and validates "path@version" (gotool.Check).
func ParseModule(s string) (module.Version, error) {
	p, v, ok := strings.Cut(s, "@")
	if !ok {
		return module.Version{}, fmt.Errorf("%q: want MODULE@VERSION, e.g. golang.org/x/text@v0.14.0", s)
	}
	mv := module.Version{Path: p, Version: v}
	if err := gotool.Check(mv); err != nil {
		return module.Version{}, fmt.Errorf("%q: %w", s, err)
	}
	return mv, nil
}

// ApproveModule records the user's approval of mod for task (no lease:
// it is the user's command).
func ApproveModule(ctx context.Context, led ModuleLedger, taskID, mod string) (module.Version, error) {
	mv, err := ParseModule(mod)
	if err != nil {
		return mv, err
	}
	data, _ := json.Marshal(ModuleEvent{Module: gotool.String(mv), Why: "approved by the user"})
	_, err = led.Append(ctx, nil, &engine.Event{TaskID: taskID, Kind: EventModuleApproved, Data: data})
	return mv, err
}

// moduleLog is the task's module events as a prefetcher has read them: it
// keeps the last seq it saw, so each refresh reads only the events appended
// since (a turn costs the same at turn 5 and turn 500). Within a task,
// events commit in seq order in both ledgers, so none is passed over.
type moduleLog struct {
	after    int64
	approved map[module.Version]bool // never changed once published: replaced
	asked    map[module.Version]bool
}

// update reads task's events after the last it saw and folds in the module
// versions approved and asked for.
func (m *moduleLog) update(ctx context.Context, led ModuleLedger, taskID string) error {
	evs, err := led.Events(ctx, taskID, m.after, 0)
	if err != nil {
		return err
	}
	if m.approved == nil {
		m.approved, m.asked = map[module.Version]bool{}, map[module.Version]bool{}
	}
	copied := false
	for _, e := range evs {
		m.after = e.Seq
		if e.Kind != EventModuleApproved && e.Kind != EventModuleApprovalNeeded {
			continue
		}
		var d ModuleEvent
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		mv, err := ParseModule(d.Module)
		if err != nil {
			continue
		}
		if e.Kind == EventModuleApprovalNeeded {
			m.asked[mv] = true
			continue
		}
		if !copied {
			// approvedNow's callers may hold the old map.
			m.approved, copied = maps.Clone(m.approved), true
		}
		m.approved[mv] = true
	}
	return nil
}

// BaseSums is what the go.sum of repo's base commit vouches for (none when
// it has no go.sum).
func BaseSums(ctx context.Context, repo, base string) (map[module.Version]gotool.Sum, error) {
	r, err := git.Open(ctx, repo)
	if err != nil {
		return nil, err
	}
	data, err := r.ShowFile(ctx, base, "go.sum")
	if errors.Is(err, fs.ErrNotExist) {
		return map[module.Version]gotool.Sum{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the base commit's go.sum: %w", err)
	}
	return gotool.ParseSum(data), nil
}

// FetchBaseKnown fetches, with the user's proxy settings, every module
// version the base's go.sum lists that the module cache lacks, and nothing
// else. The container is offline: this is what lets the base build there.
func FetchBaseKnown(ctx context.Context, sums map[module.Version]gotool.Sum) error {
	if len(sums) == 0 {
		return nil
	}
	tc, err := gotool.Shared(ctx)
	if err != nil {
		return err
	}
	pairs := make([]module.Version, 0, len(sums))
	for v := range sums {
		pairs = append(pairs, v)
	}
	_, err = tc.Fetch(ctx, pairs, sums, gotool.DefaultLimits)
	return err
}
