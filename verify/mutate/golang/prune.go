package golang

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strings"

	"github.com/bcode-dev/bcode/verify/mutate"
)

// prune decides, with go/types, whether m can build and can behave
// differently from the original. It returns the reason to drop it, or "".
// It also decides whether the package schema can express m.
func (p *pkg) prune(m *mutant, byKey map[string]*mutant) string {
	if m.check != nil {
		cs, ce := p.offset(m.check.Pos()), p.offset(m.check.End())
		text := string(m.file.src[cs:m.start]) + m.repl + string(m.file.src[m.end:ce])
		expr, err := parser.ParseExpr(text)
		if err != nil {
			return fmt.Sprintf("does not parse: %v", err)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		if err := types.CheckExpr(p.fset, p.types, m.check.Pos(), expr, info); err != nil {
			return "cannot build: " + stripPos(err.Error())
		}
		orig, mut := p.info.Types[m.check].Value, info.Types[expr].Value
		if orig != nil && mut != nil && orig.Kind() == mut.Kind() && constant.Compare(orig, token.EQL, mut) {
			return fmt.Sprintf("cannot differ: original and mutant are both the constant %s", orig.ExactString())
		}
	}
	if m.Operator == mutate.OpConstantBound {
		if dup := p.boundaryTwin(m, byKey); dup != nil {
			return fmt.Sprintf("cannot differ from the %s mutant %s (%s) on integers", dup.Operator, dup.ID, dup.Mutated)
		}
	}
	m.schemaOK = p.schemaCanExpress(m)
	return ""
}

// boundaryTwin finds the conditional-boundary mutant a constant-bound
// mutant duplicates: on integers, x < 10+1 is x <= 10, x >= 10+1 is x > 10.
func (p *pkg) boundaryTwin(m *mutant, byKey map[string]*mutant) *mutant {
	b, ok := m.wrap.(*ast.BinaryExpr)
	if !ok {
		return nil
	}
	if t, ok := p.info.Types[b.X]; !ok || !isInteger(t.Type) {
		return nil
	}
	if t, ok := p.info.Types[b.Y]; !ok || !isInteger(t.Type) {
		return nil
	}
	right := m.start > p.offset(b.OpPos)
	if right && p.offset(ast.Unparen(b.Y).Pos()) != m.start || !right && p.offset(ast.Unparen(b.X).Pos()) != m.start {
		return nil // the literal is not a whole operand
	}
	up := !strings.HasPrefix(m.repl, "-") && constantLess(m.Original, m.repl)
	var dupUp bool // the delta that duplicates the boundary mutant is +1
	switch b.Op {
	case token.LSS, token.GEQ:
		dupUp = right
	case token.LEQ, token.GTR:
		dupUp = !right
	default:
		return nil
	}
	if up != dupUp {
		return nil
	}
	return byKey[keyOf(p.offset(b.Pos()), mutate.OpConditionalBoundary)]
}

func constantLess(a, b string) bool {
	x := constant.MakeFromLiteral(a, token.INT, 0)
	y := constant.MakeFromLiteral(b, token.INT, 0)
	if x.Kind() != constant.Int || y.Kind() != constant.Int {
		return false
	}
	return constant.Compare(x, token.LSS, y)
}

func keyOf(start int, op string) string { return fmt.Sprintf("%d/%s", start, op) }

func (p *pkg) offset(pos token.Pos) int { return p.fset.Position(pos).Offset }

// schemaCanExpress reports whether the schema rewrite of m keeps the
// program's types: constants must stay constants, and the helper functions
// only take predeclared types.
func (p *pkg) schemaCanExpress(m *mutant) bool {
	tv := p.info.Types[m.wrap]
	switch m.kind {
	case wrapBool:
		// An untyped result (an if or for condition) accepts a typed bool;
		// a named boolean type would not, and go/types records it as the
		// final type when the context asks for one.
		return tv.Value == nil && (types.Identical(tv.Type, types.Typ[types.Bool]) || types.Identical(tv.Type, types.Typ[types.UntypedBool]))
	case wrapBoolLit:
		return types.Identical(tv.Type, types.Typ[types.Bool])
	case wrapPick:
		return m.typeName != "" && p.universal(m.typeName, m.wrap.Pos())
	case wrapArith:
		b, ok := tv.Type.(*types.Basic)
		if tv.Value != nil || !ok || b.Info()&types.IsInteger == 0 || b.Info()&types.IsUntyped != 0 {
			return false
		}
		m.typeName = b.Name()
		return p.universal(m.typeName, m.wrap.Pos())
	}
	return false
}

// universal reports whether name at pos means the predeclared type.
func (p *pkg) universal(name string, pos token.Pos) bool {
	scope := p.types.Scope().Innermost(pos)
	if scope == nil {
		scope = p.types.Scope()
	}
	_, obj := scope.LookupParent(name, pos)
	return obj != nil && obj == types.Universe.Lookup(name)
}

// stripPos drops the meaningless position go/types puts on errors about a
// freshly parsed expression.
func stripPos(s string) string {
	if i := strings.Index(s, ": "); i > 0 && strings.Count(s[:i], ":") >= 1 {
		return s[i+2:]
	}
	return s
}
