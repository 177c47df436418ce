package golang

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// wrapKind says how a schema expresses a mutant at its node.
type wrapKind int

const (
	// wrapBool: a boolean expression becomes
	// (active == i && (mutated) || active != i && (original)), which keeps
	// every operand evaluated at most once.
	wrapBool wrapKind = iota + 1
	// wrapBoolLit: a true/false literal becomes (active != i) / (active == i).
	wrapBoolLit
	// wrapPick: an integer constant becomes pick(active == i, T(new), T(old)).
	wrapPick
	// wrapArith: x + y becomes addSub(active == i, x, y), so x and y are
	// each evaluated once, in order.
	wrapArith
)

// mutant is a Mutant with what the engine needs to build and run it.
type mutant struct {
	mutate.Mutant
	pkg  *pkg
	file *srcFile
	// The edit: bytes [start, end) of the file are replaced by repl.
	start, end int
	repl       string
	// hot is where the mutation happens (the operator of a binary
	// expression): it selects changed lines and looks up coverage.
	hot token.Position
	// wrap is the node a schema rewrites; kind says how.
	wrap     ast.Expr
	kind     wrapKind
	typeName string // the basic type of a pick or arith wrap
	// check is the expression type-checked for pruning (the smallest
	// enclosing expression whose validity the mutation can change).
	check ast.Expr
	// schemaOK is set when the schema can express the mutant.
	schemaOK bool
	index    int // the mutant's number in its package's schema (1-based)
	occur    int
}

// srcFile is one parsed non-test Go file of a package.
type srcFile struct {
	rel  string // repository-relative, slash-separated
	abs  string
	name string // base name
	src  []byte
	ast  *ast.File
	// ignores maps a line to the reason of a //bcode:ignore-mutant that
	// covers it; funcIgnores covers whole functions.
	ignores     map[int]string
	funcIgnores []ignoreSpan
}

type ignoreSpan struct {
	from, to token.Pos
	reason   string
}

const ignoreDirective = "//bcode:ignore-mutant"

// scanIgnores records the file's //bcode:ignore-mutant directives. A
// directive applies to its own line and, when it stands alone on its line,
// to the next line; in a function's doc comment it applies to the whole
// function. A directive without a reason is an error and suppresses nothing.
func scanIgnores(fset *token.FileSet, f *srcFile) []string {
	var errs []string
	f.ignores = map[int]string{}
	parse := func(c *ast.Comment) (string, bool) {
		rest, ok := strings.CutPrefix(c.Text, ignoreDirective)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			return "", false
		}
		reason := strings.TrimSpace(rest)
		if reason == "" {
			pos := fset.Position(c.Pos())
			errs = append(errs, fmt.Sprintf("%s:%d: %s needs a reason (e.g. %s equivalent: the loop bound is never reached)", f.rel, pos.Line, ignoreDirective, ignoreDirective))
			return "", false
		}
		return reason, true
	}
	inDoc := map[*ast.Comment]bool{}
	for _, d := range f.ast.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Doc == nil {
			continue
		}
		for _, c := range fd.Doc.List {
			inDoc[c] = true
			if reason, ok := parse(c); ok {
				f.funcIgnores = append(f.funcIgnores, ignoreSpan{fd.Pos(), fd.End(), reason})
			}
		}
	}
	for _, g := range f.ast.Comments {
		for _, c := range g.List {
			if inDoc[c] {
				continue
			}
			reason, ok := parse(c)
			if !ok {
				continue
			}
			pos := fset.Position(c.Pos())
			f.ignores[pos.Line] = reason
			if alone(f.src, pos.Offset) {
				f.ignores[pos.Line+1] = reason
			}
		}
	}
	return errs
}

// alone reports whether only blanks precede offset on its line.
func alone(src []byte, offset int) bool {
	for i := offset - 1; i >= 0 && src[i] != '\n'; i-- {
		if src[i] != ' ' && src[i] != '\t' {
			return false
		}
	}
	return true
}

func (f *srcFile) ignoreReason(m *mutant) (string, bool) {
	if r, ok := f.ignores[m.hot.Line]; ok {
		return r, true
	}
	if r, ok := f.ignores[m.Line]; ok {
		return r, true
	}
	for _, s := range f.funcIgnores {
		if m.wrap.Pos() >= s.from && m.wrap.End() <= s.to {
			return s.reason, true
		}
	}
	return "", false
}

// generator walks one file and lists every mutant in it, in source order.
type generator struct {
	fset *token.FileSet
	info *types.Info
	pkg  *pkg
	file *srcFile
	fn   string
	out  []*mutant
	// stack of ancestors of the node being visited.
	stack []ast.Node
}

func generate(p *pkg, f *srcFile) []*mutant {
	g := &generator{fset: p.fset, info: p.info, pkg: p, file: f}
	for _, d := range f.ast.Decls {
		g.fn = ""
		if fd, ok := d.(*ast.FuncDecl); ok {
			g.fn = funcName(fd)
		}
		ast.Inspect(d, g.visit)
	}
	// Occurrence index: the same mutation of the same text in the same
	// function gets 0, 1, 2... in source order, so IDs stay unique and
	// still do not depend on line numbers.
	ids := mutate.IDs{}
	for _, m := range g.out {
		m.occur = ids.Assign(&m.Mutant)
	}
	return g.out
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func (g *generator) visit(n ast.Node) bool {
	if n == nil {
		g.stack = g.stack[:len(g.stack)-1]
		return true
	}
	switch x := n.(type) {
	case *ast.BinaryExpr:
		g.binary(x)
	case *ast.IfStmt:
		g.condition(x.Cond)
	case *ast.ForStmt:
		if x.Cond != nil {
			g.condition(x.Cond)
		}
	case *ast.BasicLit:
		g.literal(x)
	case *ast.ReturnStmt:
		for _, r := range x.Results {
			g.boolLiteral(ast.Unparen(r))
		}
	}
	g.stack = append(g.stack, n)
	return true
}

func (g *generator) text(n ast.Node) string {
	return string(g.file.src[g.off(n.Pos()):g.off(n.End())])
}

func (g *generator) off(p token.Pos) int { return g.fset.Position(p).Offset }

// add records a mutant replacing node disp (display range) with repl.
func (g *generator) add(op string, disp ast.Node, hot token.Pos, repl string, wrap ast.Expr, kind wrapKind, check ast.Expr) *mutant {
	start, end := g.off(disp.Pos()), g.off(disp.End())
	sp, ep := g.fset.Position(disp.Pos()), g.fset.Position(disp.End())
	m := &mutant{
		Mutant: mutate.Mutant{
			File: g.file.rel, Func: g.fn,
			Line: sp.Line, Col: sp.Column, EndLine: ep.Line, EndCol: ep.Column,
			Operator: op,
			Original: string(g.file.src[start:end]),
			Mutated:  repl,
		},
		pkg: g.pkg, file: g.file,
		start: start, end: end, repl: repl,
		hot:  g.fset.Position(hot),
		wrap: wrap, kind: kind, check: check,
	}
	g.out = append(g.out, m)
	return m
}

var boundary = map[token.Token]token.Token{token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR}
var negation = map[token.Token]token.Token{token.EQL: token.NEQ, token.NEQ: token.EQL, token.LSS: token.GEQ, token.LEQ: token.GTR, token.GTR: token.LEQ, token.GEQ: token.LSS}

func isComparison(op token.Token) bool { _, ok := negation[op]; return ok }

// swapOp returns the text of b with its operator replaced.
func (g *generator) swapOp(b *ast.BinaryExpr, op token.Token) string {
	s := g.text(b)
	at := g.off(b.OpPos) - g.off(b.Pos())
	return s[:at] + op.String() + s[at+len(b.Op.String()):]
}

func (g *generator) binary(b *ast.BinaryExpr) {
	if isComparison(b.Op) {
		if to, ok := boundary[b.Op]; ok {
			g.add(mutate.OpConditionalBoundary, b, b.OpPos, g.swapOp(b, to), b, wrapBool, b)
		}
		g.add(mutate.OpRelationalNegation, b, b.OpPos, g.swapOp(b, negation[b.Op]), b, wrapBool, b)
		return
	}
	if b.Op == token.LAND || b.Op == token.LOR {
		g.condition(b.X)
		g.condition(b.Y)
		return
	}
	if (b.Op == token.ADD || b.Op == token.SUB) && g.indexArith(b) {
		to := token.SUB
		if b.Op == token.SUB {
			to = token.ADD
		}
		g.add(mutate.OpArithIndex, b, b.OpPos, g.swapOp(b, to), b, wrapArith, g.indexContext(b))
	}
}

// indexArith reports whether b is index or length arithmetic: it sits in
// an index or slice bound, or one operand is len(...) or cap(...).
func (g *generator) indexArith(b *ast.BinaryExpr) bool {
	if t, ok := g.info.Types[b]; !ok || !isInteger(t.Type) {
		return false
	}
	if g.lenCall(b.X) || g.lenCall(b.Y) {
		return true
	}
	return g.indexContext(b) != b
}

func (g *generator) lenCall(e ast.Expr) bool {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(c.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	b, ok := g.info.Uses[id].(*types.Builtin)
	return ok && (b.Name() == "len" || b.Name() == "cap")
}

// indexContext returns the index or slice expression whose index or bound
// contains n through arithmetic and parentheses only, or n itself.
func (g *generator) indexContext(n ast.Expr) ast.Expr {
	child := ast.Node(n)
	for i := len(g.stack) - 1; i >= 0; i-- {
		switch p := g.stack[i].(type) {
		case *ast.ParenExpr:
		case *ast.BinaryExpr:
			switch p.Op {
			case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.SHL, token.SHR:
			default:
				return n
			}
		case *ast.IndexExpr:
			if child == p.Index {
				return p
			}
			return n
		case *ast.SliceExpr:
			if child == p.Low || child == p.High || child == p.Max {
				return p
			}
			return n
		default:
			return n
		}
		child = g.stack[i]
	}
	return n
}

// comparisonParent returns the comparison n is a direct operand of
// (through parentheses), or nil.
func (g *generator) comparisonParent() *ast.BinaryExpr {
	for i := len(g.stack) - 1; i >= 0; i-- {
		switch p := g.stack[i].(type) {
		case *ast.ParenExpr:
			continue
		case *ast.BinaryExpr:
			if isComparison(p.Op) {
				return p
			}
		}
		return nil
	}
	return nil
}

// condition adds the negation of a condition operand. Comparisons are left
// to relational negation and && / || to their operands, so no two
// operators produce the same mutant.
func (g *generator) condition(e ast.Expr) {
	e = ast.Unparen(e)
	if b, ok := e.(*ast.BinaryExpr); ok && (isComparison(b.Op) || b.Op == token.LAND || b.Op == token.LOR) {
		return
	}
	if id, ok := e.(*ast.Ident); ok && (id.Name == "true" || id.Name == "false") {
		return
	}
	var repl string
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.NOT {
		repl = g.text(ast.Unparen(u.X))
	} else {
		switch e.(type) {
		case *ast.Ident, *ast.CallExpr, *ast.SelectorExpr, *ast.IndexExpr, *ast.IndexListExpr:
			repl = "!" + g.text(e)
		default:
			repl = "!(" + g.text(e) + ")"
		}
	}
	g.add(mutate.OpConditionNegation, e, e.Pos(), repl, e, wrapBool, e)
}

// literal adds +-1 mutants of an integer constant that bounds a
// comparison, an index or a slice.
func (g *generator) literal(l *ast.BasicLit) {
	if l.Kind != token.INT {
		return
	}
	v := constant.MakeFromLiteral(l.Value, l.Kind, 0)
	if v.Kind() != constant.Int {
		return
	}
	cmp := g.comparisonParent()
	ctx := g.indexContext(l)
	if cmp == nil && ctx == l {
		return
	}
	for _, d := range []int64{1, -1} {
		nv := constant.BinaryOp(v, token.ADD, constant.MakeInt64(d))
		repl := nv.ExactString()
		if cmp != nil {
			m := g.add(mutate.OpConstantBound, l, l.Pos(), repl, cmp, wrapBool, cmp)
			m.typeName = ""
			continue
		}
		m := g.add(mutate.OpConstantBound, l, l.Pos(), repl, l, wrapPick, ctx)
		if t, ok := g.info.Types[l]; ok {
			if b, ok := t.Type.(*types.Basic); ok && b.Info()&types.IsUntyped == 0 {
				m.typeName = b.Name()
			}
		}
	}
}

func (g *generator) boolLiteral(e ast.Expr) {
	id, ok := e.(*ast.Ident)
	if !ok || (id.Name != "true" && id.Name != "false") {
		return
	}
	if g.info.Uses[id] != types.Universe.Lookup(id.Name) {
		return
	}
	repl := "false"
	if id.Name == "false" {
		repl = "true"
	}
	g.add(mutate.OpBoolLiteral, id, id.Pos(), repl, id, wrapBoolLit, nil)
}

func isInteger(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// inRanges reports whether line lies in one of rs.
func inRanges(line int, rs []verify.LineRange) bool {
	for _, r := range rs {
		if line >= r.Start && line <= r.End {
			return true
		}
	}
	return false
}
