package pack

import (
	"cmp"
	"context"
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
	shareTypes     = 0.08
	shareTests     = 0.15
	// reserveRepoMap is kept for the repo map while the sections before it
	// are placed, so the files no ranked function names are still named.
	reserveRepoMap = 0.12
)

// selectionHead is how many selected lines the selection's short form keeps.
const selectionHead = 30

// selectionSection shows the selected lines inside the declarations that
// enclose them (whole), or the lines alone when nothing encloses them.
func (b *builder) selectionSection(g *codegraph.Graph) candidate {
	sel := b.sel
	from, to := sel.StartLine, sel.EndLine
	var names []string
	if g != nil {
		for _, s := range innermostSymbols(g.Enclosing(sel.File, sel.StartLine, sel.EndLine)) {
			from, to = min(from, s.Line), max(to, s.EndLine)
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 && strings.HasSuffix(sel.File, ".py") {
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
	// The short form is the selected lines, cut to their first
	// selectionHead lines when longer: a small budget keeps room for the
	// functions around them.
	end := min(sel.EndLine, sel.StartLine+selectionHead-1)
	selOnly, _ := b.src.snippet(sel.File, sel.StartLine, end)
	if end < sel.EndLine {
		selOnly += fmt.Sprintf("\n… (%d more lines, to %d)", sel.EndLine-end, sel.EndLine)
	}
	c.items = []item{{
		label: "selection",
		full:  head + fence(sel.File, text),
		short: fmt.Sprintf("%s lines %d-%d:\n", sel.File, sel.StartLine, end) + fence(sel.File, selOnly),
		files: []string{sel.File},
	}}
	return c
}

// seeds are the symbols the pack is about: those enclosing the selection,
// and those the goal names. Weights personalise the repo map's PageRank.
func (b *builder) seeds(g *codegraph.Graph) (ids []string, weights map[string]float64) {
	weights = map[string]float64{}
	if b.sel != nil {
		for _, s := range innermostSymbols(g.Enclosing(b.sel.File, b.sel.StartLine, b.sel.EndLine)) {
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

// graphSections are the sections derived from a code graph (Go's, or
// Python's from its ast): the functions ranked by how likely they are to
// change with the selection, the types it uses, the next ring's
// signatures and the repo map.
func (b *builder) graphSections(ctx context.Context, g *codegraph.Graph) []candidate {
	seeds, weights := b.seeds(g)
	rank := g.Rank(weights)
	shown := map[string]bool{}
	for _, id := range seeds {
		shown[id] = true
	}
	ranked := b.rankFunctions(ctx, g, seeds, rank)
	for _, sc := range ranked {
		b.ranking = append(b.ranking, Ranked{File: sc.sym.File, Name: sc.sym.Name, Line: sc.sym.Line, Score: sc.score, Why: sc.why(true), Test: sc.sym.Test, Features: sc.x[:]})
	}
	bodies, sigs := b.functionSections(ranked, shown)
	if len(seeds) == 0 {
		bodies.note = "no selection or goal identifier matched a symbol: no call graph to follow"
	}
	types := b.typesSection(g, seeds, rank, shown)
	return []candidate{bodies, types, sigs, b.repoMap(g, rank, shown)}
}

// typesSection shows the types the selection names, with the interfaces
// they satisfy or the implementations of those it uses.
func (b *builder) typesSection(g *codegraph.Graph, seeds []string, rank map[string]float64, shown map[string]bool) candidate {
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
	slices.SortStableFunc(typeIDs, func(a, c string) int {
		return cmp.Or(cmp.Compare(rank[c], rank[a]), cmp.Compare(a, c))
	})
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
	return types
}

// symbolItem renders a symbol: its source (body) when body is set, with
// its signature as the fallback.
func (b *builder) symbolItem(s *codegraph.Symbol, rel string, body bool) item {
	sig := fmt.Sprintf("- `%s` — %s:%d (%s)", s.Signature, s.File, s.Line, rel)
	sigShown := []Shown{{File: s.File, Name: s.Name, Line: s.Line, Form: FormSignature}}
	it := item{label: s.ID, short: sig, full: sig, files: []string{s.File}, fullShown: sigShown, shortShown: sigShown}
	if body {
		if text, err := b.src.snippet(s.File, s.Line, s.EndLine); err == nil && text != "" {
			it.full = fmt.Sprintf("%s:%d-%d (%s)\n", s.File, s.Line, s.EndLine, rel) + fence(s.File, text)
			it.fullShown = []Shown{{File: s.File, Name: s.Name, Line: s.Line, Form: FormBody}}
		}
	}
	return it
}

// repoMapSymbols is how many signatures a repo-map entry lists: few, so
// the map names many files.
const repoMapSymbols = 4

// repoMap lists files by the summed PageRank of their symbols, each with
// its highest-ranked symbols' signatures (Aider's repo map).
func (b *builder) repoMap(g *codegraph.Graph, rank map[string]float64, shown map[string]bool) candidate {
	c := candidate{
		title:   "Repo map",
		reason:  "the rest of the repository, files and symbols ranked by PageRank over the reference graph personalised to the selection and the goal, files that changed with the selection's file first",
		reserve: reserveRepoMap,
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
	// PageRank, relative to the best file's, plus the file's co-change
	// strength with the selection's.
	best := 0.0
	for _, f := range files {
		best = max(best, f.score)
	}
	for i := range files {
		if best > 0 {
			files[i].score /= best
		}
		files[i].score += b.histFiles[files[i].file]
	}
	slices.SortStableFunc(files, func(a, c fileScore) int {
		return cmp.Or(cmp.Compare(c.score, a.score), cmp.Compare(a.file, c.file))
	})
	for _, f := range files {
		slices.SortStableFunc(f.syms, func(a, c *codegraph.Symbol) int {
			return cmp.Or(cmp.Compare(rank[c.ID], rank[a.ID]), cmp.Compare(a.Line, c.Line))
		})
		var lines []string
		var syms []Shown
		for i, s := range f.syms {
			if i == repoMapSymbols {
				lines = append(lines, fmt.Sprintf("  … %d more", len(f.syms)-repoMapSymbols))
				break
			}
			lines = append(lines, fmt.Sprintf("  %d: %s", s.Line, oneLineText(s.Signature)))
			syms = append(syms, Shown{File: s.File, Name: s.Name, Line: s.Line, Form: FormSignature})
		}
		full := f.file + ":"
		short := f.file
		if len(lines) > 0 {
			full += "\n" + strings.Join(lines, "\n")
			short += ":\n" + lines[0]
		}
		it := item{label: f.file, full: full, short: short, files: []string{f.file}, fullShown: syms}
		if len(syms) > 0 {
			it.shortShown = syms[:1]
		}
		c.items = append(c.items, it)
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
