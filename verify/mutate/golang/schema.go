package golang

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/verify/mutate"
)

// The schema's names. They start with bcodeMutant so a clash with the
// package's own names is easy to detect (and then the schema is skipped).
const (
	schemaPrefix = "bcodeMutant"
	activeVar    = "bcodeMutantActive"
	envVar       = "BCODE_MUTANT"
	helperFile   = "bcode_mutant_schema.go"
)

// wrapNode is one node a schema rewrites, with the mutants expressed there.
type wrapNode struct {
	start, end int
	expr       ast.Expr
	kind       wrapKind
	mutants    []*mutant
	children   []*wrapNode
}

// schemaFiles renders the package's schema: every file with schema mutants
// rewritten, and the helper file. It returns file name -> content.
// Files whose rewrite does not parse lose their mutants to the fallback.
// Mutants no test covers stay in it: a cold run renders the schema before
// the baseline says which those are (its binary is the baseline's), and
// the next run must render the same files to find that binary in the cache.
func (p *pkg) schemaFiles() map[string][]byte {
	out := map[string][]byte{}
	types := map[string]bool{}
	n := 0
	for _, f := range p.files {
		var ms []*mutant
		for _, m := range p.mutants {
			if m.file == f && m.schemaOK && (m.Verdict == "" || m.Verdict == mutate.NotCovered) {
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			continue
		}
		for _, m := range ms {
			n++
			m.index = n
		}
		src, segs := p.renderFile(f, ms)
		if _, err := parser.ParseFile(token.NewFileSet(), f.name, src, parser.SkipObjectResolution); err != nil {
			for _, m := range ms {
				m.schemaOK = false
			}
			continue
		}
		for _, m := range ms {
			if m.kind == wrapPick || m.kind == wrapArith {
				types[m.typeName] = true
			}
		}
		out[f.name] = src
		if p.schemaSegs == nil {
			p.schemaSegs = map[string][]segment{}
		}
		p.schemaSegs[f.name] = segs
	}
	if len(out) == 0 {
		return nil
	}
	out[helperFile] = p.helper(types)
	return out
}

// segment is one rewritten node: its range in the original file and the
// range of its rendering in the schema file, so positions the cover tool
// reports in the schema file can be mapped back.
type segment struct {
	origStart, origEnd, newStart, newEnd int
}

// renderFile rewrites f with every mutant of ms behind the switch. Bytes
// outside the rewritten nodes are kept, and no line breaks are added, so
// the rest of the file keeps its line numbers. It also returns the
// rewritten ranges, in order.
func (p *pkg) renderFile(f *srcFile, ms []*mutant) ([]byte, []segment) {
	nodes := map[[3]int]*wrapNode{}
	var list []*wrapNode
	for _, m := range ms {
		s, e := p.offset(m.wrap.Pos()), p.offset(m.wrap.End())
		k := [3]int{s, e, int(m.kind)}
		w := nodes[k]
		if w == nil {
			w = &wrapNode{start: s, end: e, expr: m.wrap, kind: m.kind}
			nodes[k] = w
			list = append(list, w)
		}
		w.mutants = append(w.mutants, m)
	}
	// Outer nodes first; the same range with a different kind nests by kind.
	sort.Slice(list, func(i, j int) bool {
		if list[i].start != list[j].start {
			return list[i].start < list[j].start
		}
		if list[i].end != list[j].end {
			return list[i].end > list[j].end
		}
		return list[i].kind < list[j].kind
	})
	var roots []*wrapNode
	var stack []*wrapNode
	for _, w := range list {
		for len(stack) > 0 && !(w.start >= stack[len(stack)-1].start && w.end <= stack[len(stack)-1].end) {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			roots = append(roots, w)
		} else {
			top := stack[len(stack)-1]
			top.children = append(top.children, w)
		}
		stack = append(stack, w)
	}
	var b strings.Builder
	var segs []segment
	at := 0
	for _, w := range roots {
		b.Write(f.src[at:w.start])
		ns := b.Len()
		b.WriteString(p.renderNode(f.src, w))
		segs = append(segs, segment{origStart: w.start, origEnd: w.end, newStart: ns, newEnd: b.Len()})
		at = w.end
	}
	b.Write(f.src[at:])
	return []byte(b.String()), segs
}

func (p *pkg) renderRange(b *strings.Builder, src []byte, start, end int, nodes []*wrapNode) {
	at := start
	for _, w := range nodes {
		if w.start < at || w.end > end {
			continue // cannot happen for properly nested nodes
		}
		b.Write(src[at:w.start])
		b.WriteString(p.renderNode(src, w))
		at = w.end
	}
	b.Write(src[at:end])
}

func (p *pkg) renderNode(src []byte, w *wrapNode) string {
	inner := func(s, e int) string {
		var b strings.Builder
		var kids []*wrapNode
		for _, c := range w.children {
			if c.start >= s && c.end <= e {
				kids = append(kids, c)
			}
		}
		p.renderRange(&b, src, s, e, kids)
		return b.String()
	}
	switch w.kind {
	case wrapBool:
		text := inner(w.start, w.end)
		for _, m := range w.mutants {
			mut := string(src[w.start:m.start]) + m.repl + string(src[m.end:w.end])
			text = fmt.Sprintf("(%s == %d && (%s) || %s != %d && (%s))", activeVar, m.index, mut, activeVar, m.index, text)
		}
		return text
	case wrapBoolLit:
		m := w.mutants[0]
		if m.Original == "true" {
			return fmt.Sprintf("(%s != %d)", activeVar, m.index)
		}
		return fmt.Sprintf("(%s == %d)", activeVar, m.index)
	case wrapPick:
		t := w.mutants[0].typeName
		text := fmt.Sprintf("%s(%s)", t, src[w.start:w.end])
		for _, m := range w.mutants {
			text = fmt.Sprintf("%sPick_%s(%s == %d, %s(%s), %s)", schemaPrefix, t, activeVar, m.index, t, m.repl, text)
		}
		return text
	case wrapArith:
		be := w.expr.(*ast.BinaryExpr)
		m := w.mutants[0]
		x := inner(p.offset(be.X.Pos()), p.offset(be.X.End()))
		y := inner(p.offset(be.Y.Pos()), p.offset(be.Y.End()))
		fn := "AddSub" // x + y, or x - y when active
		if be.Op == token.SUB {
			fn = "SubAdd"
		}
		return fmt.Sprintf("%s%s_%s(%s == %d, %s, %s)", schemaPrefix, fn, m.typeName, activeVar, m.index, x, y)
	}
	return string(src[w.start:w.end])
}

// helper is the schema's extra file: the active mutant's number, read once
// from the environment, and the typed helpers the rewrites call.
func (p *pkg) helper(usedTypes map[string]bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by bcode mutation schemata. DO NOT EDIT.\n\npackage %s\n\nimport %sOS \"os\"\n\n", p.types.Name(), schemaPrefix)
	fmt.Fprintf(&b, "var %s = %sIndex(%sOS.Getenv(%q))\n\n", activeVar, schemaPrefix, schemaPrefix, envVar)
	fmt.Fprintf(&b, "func %sIndex(id string) int {\n\tswitch id {\n", schemaPrefix)
	for _, m := range p.mutants {
		if m.index > 0 {
			fmt.Fprintf(&b, "\tcase %q:\n\t\treturn %d\n", m.ID, m.index)
		}
	}
	b.WriteString("\t}\n\treturn 0\n}\n")
	names := make([]string, 0, len(usedTypes))
	for t := range usedTypes {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		fmt.Fprintf(&b, "\nfunc %sPick_%s(on bool, m, o %s) %s {\n\tif on {\n\t\treturn m\n\t}\n\treturn o\n}\n", schemaPrefix, t, t, t)
		fmt.Fprintf(&b, "\nfunc %sAddSub_%s(on bool, x, y %s) %s {\n\tif on {\n\t\treturn x - y\n\t}\n\treturn x + y\n}\n", schemaPrefix, t, t, t)
		fmt.Fprintf(&b, "\nfunc %sSubAdd_%s(on bool, x, y %s) %s {\n\tif on {\n\t\treturn x + y\n\t}\n\treturn x - y\n}\n", schemaPrefix, t, t, t)
	}
	return []byte(b.String())
}

// schemaClash reports whether the package already declares a name the
// schema would add.
func (p *pkg) schemaClash() bool {
	for _, n := range p.types.Scope().Names() {
		if strings.HasPrefix(n, schemaPrefix) {
			return true
		}
	}
	for _, f := range p.list.GoFiles {
		if f == helperFile {
			return true
		}
	}
	return false
}

// writeOverlay writes files (name -> content, in p's directory) under dir
// and an overlay description for `go build -overlay`, returning its path.
func (p *pkg) writeOverlay(dir, tag string, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	replace := map[string]string{}
	for name, content := range files {
		dst := filepath.Join(dir, tag+"-"+name)
		if err := os.WriteFile(dst, content, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(p.list.Dir, name)] = dst
	}
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, tag+"-overlay.json")
	return ov, os.WriteFile(ov, data, 0o644)
}
