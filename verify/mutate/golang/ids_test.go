package golang

import (
	"github.com/bcode-dev/bcode/verify/mutate"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
)

// generateFrom type-checks src as a one-file package with no imports and
// lists its mutants.
func generateFrom(t *testing.T, src string) []*mutant {
	t.Helper()
	p := &pkg{fset: token.NewFileSet()}
	f, err := parser.ParseFile(p.fset, "x.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p.info = &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Scopes: map[ast.Node]*types.Scope{}}
	if p.types, err = (&types.Config{}).Check("x", p.fset, []*ast.File{f}, p.info); err != nil {
		t.Fatal(err)
	}
	return generate(p, &srcFile{rel: "x/x.go", name: "x.go", src: []byte(src), ast: f})
}

const idSrc = `package x

func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v < lo {
		return lo
	}
	return v
}

func Other(n int) bool { return n > 2 }
`

// IDs come from content, not positions: inserting lines above (and a new
// function) leaves every existing mutant's ID unchanged, and the two
// identical comparisons in Clamp still get different IDs.
func TestIDsStableAcrossInsertedLines(t *testing.T) {
	before := generateFrom(t, idSrc)
	moved := strings.Replace(idSrc, "package x\n", "package x\n\n// A comment.\n\nfunc New(a int) bool { return a == 1 }\n", 1)
	after := generateFrom(t, moved)
	ids := map[string]bool{}
	for _, m := range after {
		ids[m.ID] = true
	}
	seen := map[string]bool{}
	for _, m := range before {
		if seen[m.ID] {
			t.Errorf("duplicate ID %s for %s %q at line %d", m.ID, m.Operator, m.Mutated, m.Line)
		}
		seen[m.ID] = true
		if !ids[m.ID] {
			t.Errorf("ID of %s %q (line %d) changed after inserting lines above", m.Operator, m.Mutated, m.Line)
		}
	}
	if len(before) < 6 || len(after) <= len(before) {
		t.Fatalf("generated %d then %d mutants", len(before), len(after))
	}
	// Editing the mutated text itself does change the ID.
	edited := generateFrom(t, strings.Replace(idSrc, "n > 2", "n > 3", 1))
	for _, m := range edited {
		if m.Func == "Other" && m.Operator == mutate.OpConditionalBoundary && ids[m.ID] {
			t.Errorf("a different comparison kept the old ID")
		}
	}
}
