package javascript

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Tamper implements verify.Adapter: tests the change deletes (or deletes
// with their file), tests it newly skips, marks todo, marks .fails or
// .failing, or puts under .skipIf/.runIf (on the test or a suite around
// it), tests or suites it newly marks .only, which stops every other test
// from running (node under --test-only, vitest and jest always), and
// changes to the runners' configuration (configFindings).
func (a *Adapter) Tamper(ctx context.Context, change *verify.Change) ([]verify.Finding, error) {
	var out []verify.Finding
	var modules []string
	for _, f := range change.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if inNodeModules(f.Path) {
			modules = append(modules, f.Path)
			continue
		}
		if !f.Binary {
			out = append(out, configFindings(f)...)
		}
		if f.Binary || !a.IsTestFile(f.Path) {
			continue
		}
		var base, head []staticTest
		var err error
		if f.Base != nil {
			if base, err = staticTests(f.Path, f.Base); err != nil {
				continue // nothing the base's tests can be compared with
			}
		}
		if f.Head != nil {
			if head, err = staticTests(f.Path, f.Head); err != nil {
				continue // ChangedTests reports a head that does not parse
			}
		}
		out = append(out, fileTamper(f.Path, base, head)...)
	}
	if len(modules) > 0 {
		slices.Sort(modules)
		// The runners and everything the tests import run from there, as
		// a Python project's .venv does.
		out = append(out, verify.Finding{Code: verify.FindingTestInfra, Path: modules[0],
			Message: fmt.Sprintf("the installed packages the tests run with changed (node_modules): %d files, %s first", len(modules), modules[0])})
	}
	return out, nil
}

// inNodeModules reports a path inside a node_modules directory.
func inNodeModules(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "node_modules")
}

// fileTamper compares one test file's tests on both sides.
func fileTamper(p string, base, head []staticTest) []verify.Finding {
	byName := map[string]staticTest{}
	for _, t := range head {
		byName[t.Name] = t
	}
	var out []verify.Finding
	seen := map[string]bool{}
	for _, t := range base {
		if t.Suite || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		h, ok := byName[t.Name]
		switch {
		case !ok:
			out = append(out, verify.Finding{Code: verify.FindingTestDeleted, Path: p, Message: fmt.Sprintf("test %q was deleted", t.Name)})
		case h.Skipped && !t.Skipped:
			out = append(out, verify.Finding{Code: verify.FindingTestSkipped, Path: p, Message: fmt.Sprintf("test %q is newly skipped", t.Name)})
		case h.Fails && !t.Fails:
			out = append(out, verify.Finding{Code: verify.FindingTestSkipped, Path: p, Message: fmt.Sprintf("test %q is newly marked .fails/.failing: it passes when its body fails", t.Name)})
		case h.Conditional && !t.Conditional:
			out = append(out, verify.Finding{Code: verify.FindingTestSkipped, Path: p, Message: fmt.Sprintf("test %q newly runs only under a condition (.skipIf/.runIf)", t.Name)})
		}
	}
	only := map[string]bool{}
	for _, t := range base {
		if t.Only {
			only[t.Name] = true
		}
	}
	for _, t := range head {
		if t.Only && !only[t.Name] {
			out = append(out, verify.Finding{Code: verify.FindingTestSkipped, Path: p, Message: fmt.Sprintf("%q is newly marked .only: every other test stops running", t.Name)})
		}
	}
	return out
}

// sortTests orders tests by file, then name, so results do not depend on
// map order.
func sortTests(ts []verify.Test) {
	slices.SortFunc(ts, func(a, b verify.Test) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
