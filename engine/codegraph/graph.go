// Package codegraph indexes a repository's code into a graph the context
// pack walks: definitions, references, the call graph (static calls plus
// interface dispatch resolved class-hierarchy style), type relations
// (implements, embeds) and which tests reach which functions.
//
// Go code is indexed with golang.org/x/tools/go/packages and go/types, one
// directory (package plus its tests) at a time. Each directory's result is
// stored under the hash of its files' contents, so a restart reuses it and a
// change re-indexes only the directories it touched and their direct
// importers. Cross-package relations are stored as symbol IDs (strings), and
// implements/dispatch edges are derived when the graph is assembled, by
// matching method sets, so no whole-program analysis has to be redone when
// one package changes.
package codegraph

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Kind is what a symbol is.
type Kind string

const (
	KindFunc      Kind = "func"
	KindMethod    Kind = "method"
	KindType      Kind = "type"
	KindInterface Kind = "interface"
	KindVar       Kind = "var"
	KindConst     Kind = "const"
)

// Symbol is one top-level definition (or method).
type Symbol struct {
	// ID is unique across the repository: "pkgpath.Name" or
	// "pkgpath.Recv.Method" (the receiver without its pointer).
	ID      string `json:"id"`
	Name    string `json:"name"`
	Kind    Kind   `json:"kind"`
	Pkg     string `json:"pkg"`
	File    string `json:"file"` // slash-separated, relative to the repository
	Line    int    `json:"line"` // first line, doc comment included
	EndLine int    `json:"end_line"`
	// Signature is the declaration's first line(s) without its body:
	// "func (s *Server) Serve(ctx context.Context) error".
	Signature string `json:"sig"`
	// Test marks a test entry point: TestX, BenchmarkX, FuzzX, ExampleX in
	// a _test.go file.
	Test bool `json:"test,omitempty"`
}

// EdgeKind is how two symbols relate.
type EdgeKind string

const (
	EdgeCalls      EdgeKind = "calls"      // From's body calls To
	EdgeRefs       EdgeKind = "refs"       // From's body or type names To without calling it
	EdgeEmbeds     EdgeKind = "embeds"     // struct or interface From embeds To
	EdgeImplements EdgeKind = "implements" // type From implements interface To (derived)
	EdgeDispatch   EdgeKind = "dispatch"   // interface method From may run as To (derived)
)

// Edge is one directed relation between two symbol IDs.
type Edge struct {
	Kind EdgeKind `json:"k"`
	From string   `json:"f"`
	To   string   `json:"t"`
}

// MethodSet maps a method key ("Name func(params) results", types fully
// qualified) to the ID of the method that provides it.
type MethodSet map[string]string

// Unit is the index of one directory: a Go package with its in-package and
// external tests. It is what the store keeps, under Hash.
type Unit struct {
	Dir     string   `json:"dir"`
	Hash    string   `json:"hash"`
	Pkgs    []string `json:"pkgs"`    // package paths defined here (p, p_test)
	Imports []string `json:"imports"` // repository package paths imported
	Symbols []Symbol `json:"symbols"`
	Edges   []Edge   `json:"edges"`
	// Types and Interfaces hold method sets, matched across the whole
	// repository when the graph is assembled.
	Types      map[string]MethodSet `json:"types,omitempty"`
	Interfaces map[string]MethodSet `json:"ifaces,omitempty"`
	// Errors are load or type errors; the unit is still indexed as far as
	// type checking got.
	Errors []string `json:"errors,omitempty"`
	// Took is how long checking and indexing the directory took: the
	// measurement the next load's deadline is derived from.
	Took time.Duration `json:"took_ns,omitempty"`
}

// Graph is the assembled index of a whole repository.
type Graph struct {
	Module  string
	Symbols map[string]*Symbol
	out     map[string][]Edge
	in      map[string][]Edge
	byFile  map[string][]*Symbol // sorted by line
	units   map[string]*Unit
	ranked  []string // symbol IDs, sorted
	pkgDirs map[string]string
}

// Assemble builds the graph from units, deriving implements and dispatch
// edges by matching method sets. The result does not depend on the order of
// units.
func Assemble(module string, units []*Unit) *Graph {
	g := &Graph{
		Module:  module,
		Symbols: map[string]*Symbol{},
		out:     map[string][]Edge{},
		in:      map[string][]Edge{},
		byFile:  map[string][]*Symbol{},
		units:   map[string]*Unit{},
		pkgDirs: map[string]string{},
	}
	units = slices.Clone(units)
	slices.SortFunc(units, func(a, b *Unit) int { return cmp.Compare(a.Dir, b.Dir) })
	types := map[string]MethodSet{}
	ifaces := map[string]MethodSet{}
	var edges []Edge
	for _, u := range units {
		g.units[u.Dir] = u
		for _, p := range u.Pkgs {
			g.pkgDirs[p] = u.Dir
		}
		for i := range u.Symbols {
			s := &u.Symbols[i]
			if _, dup := g.Symbols[s.ID]; dup {
				continue
			}
			g.Symbols[s.ID] = s
			g.byFile[s.File] = append(g.byFile[s.File], s)
		}
		edges = append(edges, u.Edges...)
		for id, ms := range u.Types {
			types[id] = ms
		}
		for id, ms := range u.Interfaces {
			ifaces[id] = ms
		}
	}
	edges = append(edges, deriveDispatch(types, ifaces)...)
	slices.SortFunc(edges, compareEdges)
	edges = slices.Compact(edges)
	for _, e := range edges {
		g.out[e.From] = append(g.out[e.From], e)
		g.in[e.To] = append(g.in[e.To], e)
	}
	for f := range g.byFile {
		slices.SortFunc(g.byFile[f], func(a, b *Symbol) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.ID, b.ID))
		})
	}
	for id := range g.Symbols {
		g.ranked = append(g.ranked, id)
	}
	slices.Sort(g.ranked)
	return g
}

func compareEdges(a, b Edge) int {
	return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Kind, b.Kind))
}

// deriveDispatch matches every concrete type's method set against every
// non-empty interface's: a type that has all of an interface's methods
// implements it, and each interface method may dispatch to the type's
// method. This is class-hierarchy analysis over the repository's own
// types, done on stored method keys so it needs no type checker.
func deriveDispatch(types, ifaces map[string]MethodSet) []Edge {
	// Index types by method key so each interface only meets the types that
	// have its rarest method.
	byKey := map[string][]string{}
	for t, ms := range types {
		for k := range ms {
			byKey[k] = append(byKey[k], t)
		}
	}
	var out []Edge
	for iface, ims := range ifaces {
		if len(ims) == 0 {
			continue
		}
		var rarest []string
		first := true
		for k := range ims {
			if c := byKey[k]; first || len(c) < len(rarest) {
				rarest, first = c, false
			}
		}
		for _, t := range rarest {
			tms := types[t]
			ok := true
			for k := range ims {
				if _, has := tms[k]; !has {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			out = append(out, Edge{Kind: EdgeImplements, From: t, To: iface})
			for k, im := range ims {
				out = append(out, Edge{Kind: EdgeDispatch, From: im, To: tms[k]})
			}
		}
	}
	return out
}

// Out returns the edges leaving id, sorted.
func (g *Graph) Out(id string) []Edge { return g.out[id] }

// In returns the edges arriving at id, sorted.
func (g *Graph) In(id string) []Edge { return g.in[id] }

// IDs returns every symbol ID, sorted.
func (g *Graph) IDs() []string { return g.ranked }

// FileSymbols returns the symbols defined in file, by line.
func (g *Graph) FileSymbols(file string) []*Symbol { return g.byFile[file] }

// Files returns every indexed file, sorted.
func (g *Graph) Files() []string {
	out := make([]string, 0, len(g.byFile))
	for f := range g.byFile {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// Enclosing returns the symbols of file whose lines overlap [start, end],
// innermost-first order is not needed for top-level declarations, so they
// come by line.
func (g *Graph) Enclosing(file string, start, end int) []*Symbol {
	var out []*Symbol
	for _, s := range g.byFile[file] {
		if s.Line <= end && s.EndLine >= start {
			out = append(out, s)
		}
	}
	return out
}

// Callers returns the IDs of symbols that call id directly or through
// interface dispatch (a call of an interface method whose implementation is
// id), sorted.
func (g *Graph) Callers(id string) []string {
	set := map[string]bool{}
	for _, e := range g.in[id] {
		switch e.Kind {
		case EdgeCalls, EdgeRefs:
			if s, ok := g.Symbols[e.From]; ok && isCode(s) {
				set[e.From] = true
			}
		case EdgeDispatch:
			for _, e2 := range g.in[e.From] {
				if e2.Kind == EdgeCalls || e2.Kind == EdgeRefs {
					set[e2.From] = true
				}
			}
		}
	}
	delete(set, id)
	return sortedKeys(set)
}

// Callees returns the IDs of functions and methods id calls (or takes as a
// value), with interface methods expanded to their implementations, sorted.
func (g *Graph) Callees(id string) []string {
	set := map[string]bool{}
	for _, e := range g.out[id] {
		if e.Kind != EdgeCalls && e.Kind != EdgeRefs {
			continue
		}
		s, ok := g.Symbols[e.To]
		if !ok || !isCode(s) {
			continue
		}
		set[e.To] = true
		for _, d := range g.out[e.To] {
			if d.Kind == EdgeDispatch {
				set[d.To] = true
			}
		}
	}
	delete(set, id)
	return sortedKeys(set)
}

// TypesUsed returns the IDs of types and interfaces id names, sorted.
func (g *Graph) TypesUsed(id string) []string {
	set := map[string]bool{}
	for _, e := range g.out[id] {
		if s, ok := g.Symbols[e.To]; ok && (s.Kind == KindType || s.Kind == KindInterface) {
			set[e.To] = true
		}
	}
	// A method's receiver type is used by definition.
	if s, ok := g.Symbols[id]; ok && s.Kind == KindMethod {
		if recv := strings.TrimSuffix(id, "."+s.Name); recv != id {
			if _, ok := g.Symbols[recv]; ok {
				set[recv] = true
			}
		}
	}
	delete(set, id)
	return sortedKeys(set)
}

// Implementations returns the types that implement interface id, sorted.
func (g *Graph) Implementations(id string) []string {
	var out []string
	for _, e := range g.in[id] {
		if e.Kind == EdgeImplements {
			out = append(out, e.From)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Implements returns the interfaces type id implements, sorted.
func (g *Graph) Implements(id string) []string {
	var out []string
	for _, e := range g.out[id] {
		if e.Kind == EdgeImplements {
			out = append(out, e.To)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Reach is a symbol found by a walk, with its distance in edges.
type Reach struct {
	ID   string
	Dist int
}

// TestsReaching returns the test entry points from which id is reachable
// through calls, references and interface dispatch, nearest first (ties by
// ID), at most limit of them (limit <= 0: all).
func (g *Graph) TestsReaching(id string, limit int) []Reach {
	dist := map[string]int{id: 0}
	frontier := []string{id}
	var out []Reach
	for d := 1; len(frontier) > 0; d++ {
		var next []string
		for _, cur := range frontier {
			for _, c := range g.Callers(cur) {
				if _, seen := dist[c]; seen {
					continue
				}
				dist[c] = d
				next = append(next, c)
				if s := g.Symbols[c]; s != nil && s.Test {
					out = append(out, Reach{ID: c, Dist: d})
				}
			}
		}
		slices.Sort(next)
		frontier = next
	}
	slices.SortStableFunc(out, func(a, b Reach) int { return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.ID, b.ID)) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Neighbourhood walks callers and callees from the seeds breadth-first up
// to maxDist, returning every symbol met (seeds excluded) with its
// distance, nearest first, ties by ID.
func (g *Graph) Neighbourhood(seeds []string, maxDist int) []Reach {
	dist := map[string]int{}
	frontier := slices.Clone(seeds)
	slices.Sort(frontier)
	for _, s := range seeds {
		dist[s] = 0
	}
	var out []Reach
	for d := 1; d <= maxDist && len(frontier) > 0; d++ {
		var next []string
		for _, cur := range frontier {
			for _, n := range append(g.Callers(cur), g.Callees(cur)...) {
				if _, seen := dist[n]; seen {
					continue
				}
				dist[n] = d
				next = append(next, n)
				out = append(out, Reach{ID: n, Dist: d})
			}
		}
		slices.Sort(next)
		frontier = next
	}
	slices.SortStableFunc(out, func(a, b Reach) int { return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.ID, b.ID)) })
	return out
}

func isCode(s *Symbol) bool { return s.Kind == KindFunc || s.Kind == KindMethod }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
