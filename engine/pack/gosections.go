package pack

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/engine/codegraph"
)

// Section shares: the most a section may take of the budget, so the repo
// map and the tests always keep some room.
const (
	shareSelection = 0.40
	shareRules     = 0.12
	shareHistory   = 0.12
	shareNeighbour = 0.35
	shareTypes     = 0.15
	shareTests     = 0.15
)

// selectionSection shows the selected lines inside the declarations that
// enclose them (whole), or the lines alone when nothing encloses them.
func (b *builder) selectionSection(g *codegraph.Graph) candidate {
	sel := b.sel
	from, to := sel.StartLine, sel.EndLine
	var names []string
	if g != nil {
		for _, s := range g.Enclosing(sel.File, sel.StartLine, sel.EndLine) {
			from, to = min(from, s.Line), max(to, s.EndLine)
			names = append(names, s.Name)
		}
	}
	if strings.HasSuffix(sel.File, ".py") {
		if f, t, ok := b.enclosingDef(sel.File, sel.StartLine); ok {
			from, to = min(from, f), max(to, t)
			first, _ := b.src.snippet(sel.File, f, f)
			names = append(names, strings.TrimSuffix(strings.TrimSpace(first), ":"))
		}
	}
	c := candidate{title: fmt.Sprintf("Selection: %s:%d-%d", sel.File, sel.StartLine, sel.EndLine), share: shareSelection}
	if len(names) > 0 {
		c.reason = "the selected lines and the declaration(s) enclosing them: " + strings.Join(names, ", ")
	} else {
		c.reason = "the selected lines"
	}
	text, err := b.src.snippet(sel.File, from, to)
	if err != nil {
		c.note = "selection unreadable: " + shortErr(err)
		return c
	}
	head := fmt.Sprintf("%s lines %d-%d (selected %d-%d):\n", sel.File, from, to, sel.StartLine, sel.EndLine)
	selOnly, _ := b.src.snippet(sel.File, sel.StartLine, sel.EndLine)
	c.items = []item{{
		label: "selection",
		full:  head + fence(sel.File, text),
		short: fmt.Sprintf("%s lines %d-%d:\n", sel.File, sel.StartLine, sel.EndLine) + fence(sel.File, selOnly),
		files: []string{sel.File},
	}}
	return c
}

// seeds are the symbols the pack is about: those enclosing the selection,
// and those the goal names. Weights personalise the repo map's PageRank.
func (b *builder) seeds(g *codegraph.Graph) (ids []string, weights map[string]float64) {
	weights = map[string]float64{}
	if b.sel != nil {
		for _, s := range g.Enclosing(b.sel.File, b.sel.StartLine, b.sel.EndLine) {
			weights[s.ID] += 1
		}
		// A selection outside any declaration still points at its file.
		for _, s := range g.FileSymbols(b.sel.File) {
			weights[s.ID] += 0.05
		}
	}
	idents := goalIdentifiers(b.in.Goal)
	if len(idents) > 0 {
		for _, id := range g.IDs() {
			s := g.Symbols[id]
			if idents[strings.ToLower(s.Name)] {
				weights[id] += 0.5
			}
		}
	}
	for id, w := range weights {
		if w >= 0.5 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, weights
}

var identRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]{2,}`)

// goalIdentifiers are the words of the goal that could name code, lower-cased.
func goalIdentifiers(goal string) map[string]bool {
	out := map[string]bool{}
	for _, w := range identRe.FindAllString(goal, -1) {
		if !stopWords[strings.ToLower(w)] {
			out[strings.ToLower(w)] = true
		}
	}
	return out
}

var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "from": true,
	"into": true, "when": true, "not": true, "fix": true, "add": true, "make": true, "use": true,
	"should": true, "does": true, "are": true, "was": true, "its": true, "new": true, "bug": true,
}

// goSections are the graph-derived sections for a Go repository.
func (b *builder) goSections(g *codegraph.Graph) []candidate {
	seeds, weights := b.seeds(g)
	rank := g.Rank(weights)
	byRank := func(ids []string) {
		slices.SortStableFunc(ids, func(a, c string) int {
			return cmp.Or(cmp.Compare(rank[c], rank[a]), cmp.Compare(a, c))
		})
	}
	shown := map[string]bool{}
	for _, id := range seeds {
		shown[id] = true
	}
	var out []candidate

	// Callers and callees: bodies for the nearest, signatures beyond.
	nb := g.Neighbourhood(seeds, 2)
	var near, far []string
	for _, r := range nb {
		if r.Dist == 1 {
			near = append(near, r.ID)
		} else {
			far = append(far, r.ID)
		}
	}
	byRank(near)
	byRank(far)
	if len(far) > 60 {
		far = far[:60]
	}
	neighbours := candidate{
		title:  "Callers and callees",
		reason: "code that calls the selection or that it calls (interface dispatch included): bodies at distance 1, signatures at distance 2",
		share:  shareNeighbour,
	}
	callers := map[string]bool{}
	for _, s := range seeds {
		for _, c := range g.Callers(s) {
			callers[c] = true
		}
	}
	for _, id := range near {
		s := g.Symbols[id]
		rel := "callee"
		if callers[id] {
			rel = "caller"
		}
		neighbours.items = append(neighbours.items, b.symbolItem(s, rel, true))
		shown[id] = true
	}
	for _, id := range far {
		neighbours.items = append(neighbours.items, b.symbolItem(g.Symbols[id], "distance 2", false))
		shown[id] = true
	}
	if len(seeds) == 0 {
		neighbours.note = "no selection or goal identifier matched a symbol: no call graph to follow"
	}
	out = append(out, neighbours)

	// Types and interfaces used, with implementations.
	types := candidate{
		title:  "Types and interfaces",
		reason: "types the selection names, interfaces they satisfy, and the implementations of interfaces it uses",
		share:  shareTypes,
	}
	typeSet := map[string]bool{}
	for _, s := range seeds {
		for _, t := range g.TypesUsed(s) {
			typeSet[t] = true
		}
		if sym := g.Symbols[s]; sym != nil && (sym.Kind == codegraph.KindType || sym.Kind == codegraph.KindInterface) {
			typeSet[s] = true
		}
	}
	typeIDs := sortedSet(typeSet)
	byRank(typeIDs)
	for _, id := range typeIDs {
		s := g.Symbols[id]
		it := b.symbolItem(s, string(s.Kind), true)
		var rel []string
		if s.Kind == codegraph.KindInterface {
			for _, impl := range g.Implementations(id) {
				if is := g.Symbols[impl]; is != nil {
					rel = append(rel, fmt.Sprintf("- implemented by `%s` — %s:%d", shortID(impl), is.File, is.Line))
					it.files = append(it.files, is.File)
				}
			}
		} else {
			for _, iface := range g.Implements(id) {
				if is := g.Symbols[iface]; is != nil {
					rel = append(rel, fmt.Sprintf("- implements `%s` — %s:%d", shortID(iface), is.File, is.Line))
					it.files = append(it.files, is.File)
				}
			}
		}
		if len(rel) > 12 {
			rel = append(rel[:12], fmt.Sprintf("- … and %d more", len(rel)-12))
		}
		if len(rel) > 0 {
			extra := strings.Join(rel, "\n") + "\n"
			it.full += extra
			it.short += "\n" + extra
		}
		types.items = append(types.items, it)
		shown[id] = true
	}
	out = append(out, types)

	// Tests that reach the selection.
	tests := candidate{
		title:  "Tests that reach the selection",
		reason: "test functions from which the selection is reachable through calls and interface dispatch, nearest first",
		share:  shareTests,
	}
	testDist := map[string]int{}
	for _, s := range seeds {
		for _, r := range g.TestsReaching(s, 0) {
			if d, ok := testDist[r.ID]; !ok || r.Dist < d {
				testDist[r.ID] = r.Dist
			}
		}
	}
	testIDs := make([]string, 0, len(testDist))
	for id := range testDist {
		testIDs = append(testIDs, id)
	}
	slices.SortFunc(testIDs, func(a, c string) int { return cmp.Or(cmp.Compare(testDist[a], testDist[c]), cmp.Compare(a, c)) })
	if len(testIDs) > 40 {
		testIDs = testIDs[:40]
	}
	for i, id := range testIDs {
		tests.items = append(tests.items, b.symbolItem(g.Symbols[id], fmt.Sprintf("test, %d call(s) away", testDist[id]), i < 3))
		shown[id] = true
	}
	if len(seeds) > 0 && len(testIDs) == 0 {
		tests.note = "no test reaches the selection through the call graph"
	}
	out = append(out, tests)

	// Repo map: the rest, ranked.
	out = append(out, b.repoMap(g, rank, shown))
	return out
}

// symbolItem renders a symbol: its source (body) when body is set, with
// its signature as the fallback.
func (b *builder) symbolItem(s *codegraph.Symbol, rel string, body bool) item {
	sig := fmt.Sprintf("- `%s` — %s:%d (%s)", s.Signature, s.File, s.Line, rel)
	it := item{label: s.ID, short: sig, full: sig, files: []string{s.File}}
	if body {
		if text, err := b.src.snippet(s.File, s.Line, s.EndLine); err == nil && text != "" {
			it.full = fmt.Sprintf("%s:%d-%d (%s)\n", s.File, s.Line, s.EndLine, rel) + fence(s.File, text)
		}
	}
	return it
}

// repoMap lists files by the summed PageRank of their symbols, each with
// its highest-ranked symbols' signatures (Aider's repo map).
func (b *builder) repoMap(g *codegraph.Graph, rank map[string]float64, shown map[string]bool) candidate {
	c := candidate{
		title:  "Repo map",
		reason: "the rest of the repository, files and symbols ranked by PageRank over the reference graph personalised to the selection and the goal",
	}
	type fileScore struct {
		file  string
		score float64
		syms  []*codegraph.Symbol
	}
	var files []fileScore
	for _, f := range g.Files() {
		fs := fileScore{file: f}
		for _, s := range g.FileSymbols(f) {
			fs.score += rank[s.ID]
			if !shown[s.ID] && s.Kind != codegraph.KindMethod || !shown[s.ID] && rank[s.ID] > 0 {
				fs.syms = append(fs.syms, s)
			}
		}
		files = append(files, fs)
	}
	slices.SortStableFunc(files, func(a, c fileScore) int {
		return cmp.Or(cmp.Compare(c.score, a.score), cmp.Compare(a.file, c.file))
	})
	for _, f := range files {
		slices.SortStableFunc(f.syms, func(a, c *codegraph.Symbol) int {
			return cmp.Or(cmp.Compare(rank[c.ID], rank[a.ID]), cmp.Compare(a.Line, c.Line))
		})
		var lines []string
		for i, s := range f.syms {
			if i == 6 {
				lines = append(lines, fmt.Sprintf("  … %d more", len(f.syms)-6))
				break
			}
			lines = append(lines, fmt.Sprintf("  %d: %s", s.Line, s.Signature))
		}
		full := f.file + ":"
		short := f.file
		if len(lines) > 0 {
			full += "\n" + strings.Join(lines, "\n")
			short += ":\n" + lines[0]
		}
		c.items = append(c.items, item{label: f.file, full: full, short: short, files: []string{f.file}})
	}
	return c
}

// shortID drops the module path's directories from a symbol ID for display:
// "example.com/shop/mem.Map" → "mem.Map".
func shortID(id string) string {
	dir, last := path.Split(id)
	if dir == "" {
		return id
	}
	return last
}
