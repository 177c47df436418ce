package golang

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// A save that edits function bodies keeps part of the per-test baseline.
// A test whose kept coverage reached no block of a changed function ran
// only code whose text and position are the same as before, so it does the
// same thing again; only the tests that reached a changed function (and
// the quarantined ones, whose coverage is unknown) run again.
//
// The baseline's shape key is its cache key with the package's own
// function bodies left out: two snapshots with the same shape key differ
// only inside function bodies. Any other difference (types, package
// variables and their initialisers, imports, build tags, test files,
// testdata, go.mod, the module's other packages, the toolchain, the go
// settings, the runner) changes the shape key and the full baseline runs.
//
// Positions are observable (runtime.Caller, stack traces, a logger's
// file:line), so a function that moved (an edit above it in its file
// changed the number of lines) counts as changed too: a kept test's blocks
// are then at the same absolute positions as before.

// shapeIndex is what a later save needs to reuse a baseline: its cache
// file, the files it counted blocks in, and every top-level declaration of
// the package's own files with its position and a hash of its text.
type shapeIndex struct {
	File  string                `json:"file"`
	Cover []string              `json:"cover"`
	Decls map[string][]declSpan `json:"decls"`
}

// declSpan is one top-level declaration: its position range (start
// inclusive, end exclusive, as blocks have them) and a hash of its text.
type declSpan struct {
	SL, SC, EL, EC int
	Sum            string `json:"sum"`
	// Kind: "func", "var" for a var declaration with initialisers (they
	// run at start-up, where a position can be recorded), else "".
	Kind string `json:"kind,omitempty"`
}

func (d declSpan) holds(b block) bool {
	return (b.SL > d.SL || b.SL == d.SL && b.SC >= d.SC) && (b.SL < d.EL || b.SL == d.EL && b.SC < d.EC)
}

// bodyShape is the shape key of files (as keyContent returns them) and the
// declarations of the package's own files, by base name. ok is false when
// a file does not parse or a Go file may read Go sources (a test that
// reads its package's text sees a body edit).
func bodyShape(files []keyFile, header string) (key string, decls map[string][]declSpan, ok bool) {
	h := sha256.New()
	fmt.Fprintf(h, "bcode-body-shape-v1\x00%s\x00", header)
	decls = map[string][]declSpan{}
	for _, f := range files {
		if strings.HasSuffix(f.rel, ".go") {
			for _, r := range sourceReaders {
				if bytes.Contains(f.data, []byte(r)) {
					return "", nil, false
				}
			}
		}
		data := f.data
		if f.own {
			var ds []declSpan
			data, ds, ok = stripBodies(f.data)
			if !ok {
				return "", nil, false
			}
			decls[filepath.Base(f.rel)] = ds
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s\x00%x\x00", f.rel, sum)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), decls, true
}

// stripBodies returns src with every function body replaced by {}, and
// its top-level declarations.
func stripBodies(src []byte) ([]byte, []declSpan, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, false
	}
	var out bytes.Buffer
	last := 0
	var ds []declSpan
	for _, d := range f.Decls {
		start, end := fset.Position(d.Pos()), fset.Position(d.End())
		sum := sha256.Sum256(src[start.Offset:end.Offset])
		ds = append(ds, declSpan{SL: start.Line, SC: start.Column, EL: end.Line, EC: end.Column, Sum: hex.EncodeToString(sum[:12]), Kind: declKind(d)})
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			lb, rb := fset.Position(fd.Body.Lbrace).Offset, fset.Position(fd.Body.Rbrace).Offset
			out.Write(src[last:lb])
			out.WriteString("{}")
			last = rb + 1
		}
	}
	out.Write(src[last:])
	return out.Bytes(), ds, true
}

func declKind(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return "func"
	case *ast.GenDecl:
		if d.Tok == token.VAR {
			for _, sp := range d.Specs {
				if len(sp.(*ast.ValueSpec).Values) > 0 {
					return "var"
				}
			}
		}
	}
	return ""
}

// shapeFile is where the shape index of key lives.
func (s *session) shapeFile(key string) string {
	return filepath.Join(s.opts.CacheDir, "baseline", "shape-"+key+".json")
}

// coverNames are the base names of p's files in sel, sorted.
func coverNames(p *pkg, sel []int) []string {
	var names []string
	for _, i := range sel {
		names = append(names, p.files[i].name)
	}
	sort.Strings(names)
	return names
}

// partialBaseline is a kept baseline and the tests of it that run again.
type partialBaseline struct {
	kept  []baseTest
	rerun []string
	order []string // every test, in source order
}

// keptBaseline finds the baseline of the last snapshot with p's shape and
// says which of its tests keep their coverage. nil: none, or not sound
// (the files with counters differ, a changed declaration has no block, a
// test was quarantined).
func (s *session) keptBaseline(p *pkg, shape string, decls map[string][]declSpan, cover []string) *partialBaseline {
	data, err := sandbox.ReadPath(s.shapeFile(shape), maxCacheEntry)
	if err != nil {
		return nil
	}
	var idx shapeIndex
	if json.Unmarshal(data, &idx) != nil || strings.Join(idx.Cover, "\x00") != strings.Join(cover, "\x00") {
		return nil
	}
	data, err = sandbox.ReadPath(filepath.Join(s.opts.CacheDir, "baseline", filepath.Base(idx.File)), maxCacheEntry)
	if err != nil {
		return nil
	}
	var old baseline
	// A quarantined test's coverage and place in source order are not
	// kept; the tests are ordered by source order (runOrder), so such a
	// baseline runs in full.
	if json.Unmarshal(data, &old) != nil || len(old.Quarantined) > 0 {
		return nil
	}
	changed, ok := changedDecls(idx.Decls, decls, cover)
	if !ok {
		return nil
	}
	// Every changed declaration must have blocks in the old baseline, or
	// no test could have been seen reaching it.
	for _, d := range changed {
		if !anyBlockIn(old.Blocks, d) {
			return nil
		}
	}
	pb := &partialBaseline{}
	for _, t := range old.Tests {
		reached := false
		for _, d := range changed {
			if anyBlockIn(t.Blocks, d) {
				reached = true
				break
			}
		}
		pb.order = append(pb.order, t.Name)
		if reached {
			pb.rerun = append(pb.rerun, t.Name)
		} else {
			pb.kept = append(pb.kept, t)
		}
	}
	return pb
}

// fileDecl is one declaration of a named file.
type fileDecl struct {
	file string
	span declSpan
}

// changedDecls are the functions of before (old positions) whose text or
// position differs in after. ok is false when the files or their
// declaration counts differ, a change is in a file without counters, or a
// var declaration with initialisers moved. Types and constants that moved
// run no code.
func changedDecls(before, after map[string][]declSpan, cover []string) ([]fileDecl, bool) {
	if len(before) != len(after) {
		return nil, false
	}
	counted := map[string]bool{}
	for _, n := range cover {
		counted[n] = true
	}
	var changed []fileDecl
	for name, bs := range before {
		as, ok := after[name]
		if !ok || len(as) != len(bs) {
			return nil, false
		}
		for i, b := range bs {
			switch {
			case b == as[i] || b.Kind == "" && b.Sum == as[i].Sum:
				continue
			case b.Kind != "func" || !counted[name]:
				return nil, false
			}
			changed = append(changed, fileDecl{name, b})
		}
	}
	return changed, true
}

func anyBlockIn(blocks []block, d fileDecl) bool {
	for _, b := range blocks {
		if b.File == d.file && d.span.holds(b) {
			return true
		}
	}
	return false
}

// runPattern is a -test.run pattern matching exactly the top-level tests
// names; none matches nothing.
func runPattern(names []string) string {
	if len(names) == 0 {
		return "^$"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// mergeKept is the baseline of a partial run: the kept tests and those
// that passed again, in source order, and every block of the new binary.
func mergeKept(pb *partialBaseline, fresh *baseline) *baseline {
	b := &baseline{Blocks: fresh.Blocks, Quarantined: fresh.Quarantined}
	byName := map[string]baseTest{}
	for _, t := range append(append([]baseTest(nil), pb.kept...), fresh.Tests...) {
		byName[t.Name] = t
	}
	for _, n := range pb.order {
		if t, ok := byName[n]; ok {
			b.Tests = append(b.Tests, t)
		}
	}
	return b
}

// storeShape writes the shape index of a baseline stored in file.
func (s *session) storeShape(shape string, idx shapeIndex) {
	data, err := json.Marshal(idx)
	if err != nil {
		return
	}
	// A cache that cannot be written only costs time next run.
	_ = writeCacheFile(s.shapeFile(shape), data)
}

// runArgs is the -test.run argument for pattern run, if any.
func runArgs(run string) []string {
	if run == "" {
		return nil
	}
	return []string{"-test.run", run}
}

// runPartialCover is runCoverBaseline for a body edit: only pb's tests to
// run again run, alone in one process and together in another; the kept
// tests keep their coverage and time.
func (s *session) runPartialCover(p *pkg, bin string, files []coverFile, pb *partialBaseline) (*baseline, error) {
	s.p.Step("baseline of %s: only function bodies changed: %d tests run again, %d keep their coverage", p.relDir, len(pb.rerun), len(pb.kept))
	run := runPattern(pb.rerun)
	var together sandbox.Result
	var togetherErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if len(pb.rerun) > 0 {
			together, togetherErr = mutate.RunBaseline(s.ctx, s.runner, "the baseline of "+p.relDir+" (tests together)", sandbox.Command{Dir: p.list.Dir, Args: []string{bin, "-test.count=1", "-test.v", "-test.run", run}}, 0)
		}
	}()
	results, allBlocks, err := s.runCoverProcess(p, bin, files, run)
	<-done
	if err != nil {
		return nil, err
	}
	if togetherErr != nil {
		return nil, togetherErr
	}
	fresh, err := judgeBaseline(p, results, allBlocks, together)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rep.Stats.BaselineKept += len(pb.kept)
	s.rep.Stats.BaselineRerun += len(pb.rerun)
	s.mu.Unlock()
	return mergeKept(pb, fresh), nil
}
