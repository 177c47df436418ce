package rust

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// Candidates implements verify.Adapter. A Rust test ID is a candidate when
// its target's tests are what the change touches: a changed integration
// test file (its own target), or a changed helper or data file under a
// crate's tests/ directory (every integration test target of that crate,
// which may include it with `mod common;` or read it). These files are
// Support: only tests use them. A source file whose #[test] functions the
// change adds or alters makes its target a candidate too, but it stays
// code, never Support: its change is also a change to what is tested.
func (a *Adapter) Candidates(ctx context.Context, _ sandbox.Runner, dir string, change *verify.Change) (verify.Candidates, error) {
	var c verify.Candidates
	unitSet := map[string]bool{}
	hasLib := libFinder(ctx, change)
	var crates []crate
	onDisk := map[string]bool{} // every unit of the head's crates
	for _, f := range change.Files {
		if inBuildOutput(f.Path) {
			continue
		}
		l, ok := locate(f.Path)
		if !ok {
			continue
		}
		if l.area != "tests" {
			if a.rustSource(f) && f.Head != nil && hasChangedTests(f, hasLib) {
				if unit, _, ok := unitOf(f.Path, hasLib); ok {
					unitSet[unit] = true
				}
			}
			continue
		}
		c.Support = append(c.Support, f.Path)
		if crates == nil {
			var err error
			if crates, err = findCrates(dir); err != nil {
				return c, fmt.Errorf("rust adapter: finding crates in %s: %w", dir, err)
			}
			for _, cr := range crates {
				for _, u := range cr.units {
					onDisk[u] = true
				}
			}
		}
		if unit, _, ok := unitOf(f.Path, hasLib); ok && strings.HasSuffix(f.Path, ".rs") && onDisk[unit] {
			unitSet[unit] = true
			continue
		}
		// A helper module or data: any integration test of the crate
		// may include or read it.
		if cr, ok := crateOf(crates, f.Path); ok {
			for _, u := range cr.units {
				if ul, ok := locate(u); ok && ul.area == "tests" {
					unitSet[u] = true
				}
			}
		}
	}
	for u := range unitSet {
		c.Units = append(c.Units, u)
	}
	sort.Strings(c.Units)
	sort.Strings(c.Support)
	return c, ctx.Err()
}

// hasChangedTests reports whether f's head has a test its base lacks or
// has otherwise.
func hasChangedTests(f verify.FileChange, hasLib func(string) bool) bool {
	base := map[string]string{}
	for _, t := range testsOf(f.Path, f.Base, hasLib) {
		base[t.test.Name] = t.fn.Body
	}
	for _, t := range testsOf(f.Path, f.Head, hasLib) {
		if b, ok := base[t.test.Name]; !ok || b != t.fn.Body {
			return true
		}
	}
	return false
}
