package rust

import (
	"context"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// fileTest is a test function with its ID's parts.
type fileTest struct {
	test verify.Test
	fn   testFn
}

// ChangedTests implements verify.Adapter: the #[test] functions of changed
// Rust files (test files and source files with unit tests alike) whose
// token stream, attributes included, the base's version of the file does
// not have. Moving a test within its file changes nothing; deleted tests
// are Tamper's.
func (a *Adapter) ChangedTests(ctx context.Context, change *verify.Change) ([]verify.Test, error) {
	hasLib := libFinder(ctx, change)
	var out []verify.Test
	for _, f := range change.Files {
		if !a.rustSource(f) || f.Head == nil {
			continue
		}
		base := map[string]string{}
		for _, t := range testsOf(f.Path, f.Base, hasLib) {
			base[t.test.Name] = t.fn.Body
		}
		for _, t := range testsOf(f.Path, f.Head, hasLib) {
			if body, ok := base[t.test.Name]; !ok || body != t.fn.Body {
				out = append(out, t.test)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, nil
}

// rustSource reports whether f is a Rust source file bcode reads.
func (a *Adapter) rustSource(f verify.FileChange) bool {
	return strings.HasSuffix(f.Path, ".rs") && !f.Binary && a.Owns(f.Path)
}

// testsOf lists the tests src defines as the file at p, with their IDs.
func testsOf(p string, src []byte, hasLib func(string) bool) []fileTest {
	if src == nil {
		return nil
	}
	unit, module, ok := unitOf(p, hasLib)
	if !ok {
		return nil
	}
	var out []fileTest
	for _, fn := range testFns(src) {
		name := strings.Join(append(append([]string(nil), module...), fn.Name), "::")
		out = append(out, fileTest{
			test: verify.Test{Language: "rust", Package: unit, File: p, Name: name},
			fn:   fn,
		})
	}
	return out
}

// libFinder says whether a crate has src/lib.rs on the head side: the
// change's own file when it touches it, else the base's tree.
func libFinder(ctx context.Context, change *verify.Change) func(string) bool {
	known := map[string]bool{}
	return func(crate string) bool {
		if v, ok := known[crate]; ok {
			return v
		}
		lib := inCrate(crate, "src/lib.rs")
		has := false
		if f, ok := change.File(lib); ok {
			has = f.Head != nil
		} else if change.Workspace != nil {
			_, err := change.Workspace.ReadBase(ctx, lib)
			has = err == nil
		}
		known[crate] = has
		return has
	}
}
