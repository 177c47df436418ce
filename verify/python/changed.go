package python

import (
	"context"
	"fmt"
	"sort"

	"github.com/bcode-dev/bcode/verify"
)

// sides is one changed test file parsed on both ends of the change.
type sides struct {
	change verify.FileChange
	base   *fileInfo // nil: no base version (or it does not parse)
	head   *fileInfo // nil: no head version
}

// parseSides parses the base and head versions of every changed test file
// in one run of the helper. A head that does not parse is an error with
// file:line when strict; a base that does not parse counts as having no
// tests (every head test is then new).
func (a *Adapter) parseSides(ctx context.Context, change *verify.Change, strict bool) ([]*sides, error) {
	var files []source
	type slot struct {
		s      *sides
		isHead bool
	}
	var slots []slot
	var out []*sides
	for _, f := range change.Files {
		if !a.IsTestFile(f.Path) || f.Binary {
			continue
		}
		s := &sides{change: f}
		out = append(out, s)
		if f.Base != nil {
			files = append(files, source{Path: f.Path, Source: f.Base})
			slots = append(slots, slot{s, false})
		}
		if f.Head != nil {
			files = append(files, source{Path: f.Path, Source: f.Head})
			slots = append(slots, slot{s, true})
		}
	}
	infos, err := a.parseOnce(ctx, change, files)
	if err != nil {
		return nil, err
	}
	for i := range infos {
		info := &infos[i]
		sl := slots[i]
		if info.Error != nil {
			if sl.isHead && strict {
				return nil, fmt.Errorf("cannot parse the head's test file: %w", info.parseFailure())
			}
			continue
		}
		if sl.isHead {
			sl.s.head = info
		} else {
			sl.s.base = info
		}
	}
	return out, nil
}

// ChangedTests implements verify.Adapter: test functions and methods of
// changed test files whose syntax tree (decorators included, positions
// and comments not) differs from the base's, or that the base lacks.
func (a *Adapter) ChangedTests(ctx context.Context, change *verify.Change) ([]verify.Test, error) {
	all, err := a.parseSides(ctx, change, true)
	if err != nil {
		return nil, err
	}
	type found struct {
		t    verify.Test
		line int
	}
	var out []found
	for _, s := range all {
		if s.head == nil {
			continue
		}
		before := map[string]string{}
		if s.base != nil {
			for _, t := range s.base.Tests {
				before[t.Name] = t.Dump
			}
		}
		seen := map[string]bool{}
		for _, t := range s.head.Tests {
			// A redefinition shadows the earlier test of the same name,
			// as it does for pytest; report the name once.
			if seen[t.Name] {
				continue
			}
			seen[t.Name] = true
			if old, ok := before[t.Name]; ok && old == lastDump(s.head.Tests, t.Name) {
				continue
			}
			out = append(out, found{verify.Test{Language: "python", Package: s.change.Path, File: s.change.Path, Name: t.Name}, t.Line})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].t.File != out[j].t.File {
			return out[i].t.File < out[j].t.File
		}
		return out[i].line < out[j].line
	})
	tests := make([]verify.Test, len(out))
	for i, f := range out {
		tests[i] = f.t
	}
	return tests, nil
}

// lastDump is the dump of the definition of name that wins (the last one).
func lastDump(ts []pyTest, name string) string {
	d := ""
	for _, t := range ts {
		if t.Name == name {
			d = t.Dump
		}
	}
	return d
}

// parseOnce runs the syntax helper over a change's test files once: the
// gate asks ChangedTests and Tamper about the same change, and a Python
// start-up is a large share of a small change's check.
func (a *Adapter) parseOnce(ctx context.Context, change *verify.Change, files []source) ([]fileInfo, error) {
	a.mu.Lock()
	if a.parsed.change == change && a.parsed.change != nil {
		infos := a.parsed.infos
		a.mu.Unlock()
		return infos, nil
	}
	a.mu.Unlock()
	infos, err := a.parseNoDir(ctx, modeTests, files)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.parsed.change, a.parsed.infos = change, infos
	a.mu.Unlock()
	return infos, nil
}
