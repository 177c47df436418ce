package rust

import (
	"context"
	"fmt"
	"sort"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// Targets implements verify.Adapter: the test targets of every crate that
// holds a changed Rust file (or manifest), and of every crate of the tree
// that depends on one of those through a path dependency, transitively.
func (a *Adapter) Targets(ctx context.Context, _ sandbox.Runner, dir string, change *verify.Change) ([]string, error) {
	crates, err := findCrates(dir)
	if err != nil {
		return nil, fmt.Errorf("rust adapter: finding crates in %s: %w", dir, err)
	}
	reached := map[string]bool{}
	for _, f := range change.Files {
		if !a.Owns(f.Path) {
			continue
		}
		if c, ok := crateOf(crates, f.Path); ok {
			reached[c.dir] = true
		}
	}
	// Reverse path dependencies until nothing new is reached.
	for grew := true; grew; {
		grew = false
		for _, c := range crates {
			if reached[c.dir] {
				continue
			}
			for _, d := range c.pathDeps {
				if reached[d] {
					reached[c.dir], grew = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, c := range crates {
		if reached[c.dir] {
			out = append(out, c.units...)
		}
	}
	sort.Strings(out)
	return out, ctx.Err()
}
