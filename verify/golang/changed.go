package golang

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// sides holds, for one package directory, the tests of every changed test
// file on the base and on the head. Comparing per directory rather than per
// file means a test moved unchanged from one file to another is neither new
// nor deleted.
type sides struct {
	dir  string
	base map[string]located // by test name
	head map[string]located
	// headOrder keeps the head's tests in file and source order, so
	// reports come out stable before sorting.
	headOrder []located
}

type located struct {
	file *testFile
	fn   *testFunc
}

// collectSides parses every changed, non-binary _test.go file of change on
// both sides. A head side that does not parse is an error naming file:line;
// a base side that does not parse contributes nothing (its tests all count
// as new).
func (a *Adapter) collectSides(ctx context.Context, change *verify.Change) ([]*sides, error) {
	if change == nil {
		return nil, fmt.Errorf("go adapter: no change given")
	}
	byDir := map[string]*sides{}
	var dirs []string
	for _, fc := range change.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if fc.Binary || !a.IsTestFile(fc.Path) || ignoredByGo(fc.Path) || isLink(fc) {
			// A symbolic link's content is its target's name: go test reads
			// the file it points to, and so do the gate's runs (the
			// snapshots keep the link); the static hint leaves it out.
			continue
		}
		dir := path.Dir(fc.Path)
		s := byDir[dir]
		if s == nil {
			s = &sides{dir: dir, base: map[string]located{}, head: map[string]located{}}
			byDir[dir] = s
			dirs = append(dirs, dir)
		}
		if fc.Base != nil && fc.Status != verify.Added {
			if bf, err := parseTestFile(fc.Path, fc.Base); err == nil {
				for _, t := range bf.Tests {
					s.base[t.Name] = located{bf, t}
				}
			}
		}
		if fc.Head != nil && fc.Status != verify.Deleted {
			hf, err := parseTestFile(fc.Path, fc.Head)
			if err != nil {
				return nil, fmt.Errorf("go adapter: the head's %w", err)
			}
			for _, t := range hf.Tests {
				s.head[t.Name] = located{hf, t}
				s.headOrder = append(s.headOrder, located{hf, t})
			}
		}
	}
	sort.Strings(dirs)
	out := make([]*sides, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, byDir[d])
	}
	return out, nil
}

// ChangedTests implements verify.Adapter.
func (a *Adapter) ChangedTests(ctx context.Context, change *verify.Change) ([]verify.Test, error) {
	all, err := a.collectSides(ctx, change)
	if err != nil {
		return nil, err
	}
	var out []verify.Test
	for _, s := range all {
		pkg := packageOfDir(s.dir)
		for _, h := range s.headOrder {
			for _, name := range changedNames(s.base[h.fn.Name].fn, h.fn) {
				out = append(out, verify.Test{Language: a.Language(), Package: pkg, File: h.file.Path, Name: name})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, nil
}

// changedNames is what go test should run to exercise the change of one
// test function from base (nil: new) to head: nothing when the syntax is the
// same, the changed subtests when only they differ, else the whole test.
func changedNames(base, head *testFunc) []string {
	if base == nil {
		return []string{head.Name}
	}
	if base.Print == head.Print {
		return nil
	}
	if base.Kind != "Test" || head.Kind != "Test" || len(head.Subtests) == 0 || base.Rest == "" || base.Rest != head.Rest {
		return []string{head.Name}
	}
	before := map[string]string{}
	for _, st := range base.Subtests {
		before[st.Name] = st.Print
	}
	var names []string
	for _, st := range head.Subtests {
		if p, ok := before[st.Name]; !ok || p != st.Print {
			names = append(names, head.Name+"/"+st.Name)
		}
	}
	if len(names) == 0 {
		// Only the order of subtests or their removal changed: the
		// test as a whole is what differs.
		return []string{head.Name}
	}
	return names
}

// ignoredByGo reports whether the go command never builds the file at p
// as part of a package pattern: anything under testdata or vendor, or under
// a directory whose name starts with "." or "_". Test files there are
// fixtures, not the repository's tests.
func ignoredByGo(p string) bool {
	dirs := strings.Split(path.Dir(p), "/")
	for _, d := range dirs {
		if d == "testdata" || d == "vendor" || d != "." && (strings.HasPrefix(d, ".") || strings.HasPrefix(d, "_")) {
			return true
		}
	}
	return false
}

// modeSymlink is git's mode for a symbolic link.
const modeSymlink = "120000"

func isLink(fc verify.FileChange) bool {
	return fc.HeadMode == modeSymlink || fc.BaseMode == modeSymlink
}
