package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"testing"
)

// Function size (RULES: no function over 100 lines or cyclomatic complexity
// over 30 outside tests). A long function hides the rules a reader most
// needs to see; the limit keeps each one readable on a screen or two.
const (
	maxFuncLines      = 100
	maxFuncComplexity = 30
)

// oversize are the functions over a limit when the rule came in, each to be
// split. The list only shrinks: a function split below both limits must
// leave it (TestFunctionSize says which), and no new one may join.
// Keyed "dir.Function" ("dir.Type.Method" for methods), dir relative to the
// module's root.
var oversize = map[string]string{}

// funcSize is one function's measure.
type funcSize struct {
	where      string // file:line
	lines      int
	complexity int
}

func (s funcSize) over() bool { return s.lines > maxFuncLines || s.complexity > maxFuncComplexity }

// complexity is a function's cyclomatic complexity as gocyclo counts it: one,
// plus one for each if, for, range, non-default case of a switch or select,
// && and ||. Function literals count toward the function they are in.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// measureFuncs measures every function declared in f, keyed as oversize is.
// Two declarations under one key (init, or one per platform's file) keep
// the larger of each measure.
func measureFuncs(fset *token.FileSet, f *ast.File, dir string, into map[string]funcSize) {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start := fset.Position(fn.Pos())
		s := funcSize{
			where:      fmt.Sprintf("%s:%d", start.Filename, start.Line),
			lines:      fset.Position(fn.End()).Line - start.Line + 1,
			complexity: complexity(fn),
		}
		key := dir + "." + funcName(fn)
		if old, ok := into[key]; ok {
			s.lines, s.complexity = max(s.lines, old.lines), max(s.complexity, old.complexity)
		}
		into[key] = s
	}
}

// moduleFuncs measures the functions of every non-test, non-generated .go
// file of the module (all platforms' files, testdata left out).
func moduleFuncs(t *testing.T) map[string]funcSize {
	t.Helper()
	out := map[string]funcSize{}
	eachProductionFile(t, func(pf productionFile) {
		if !ast.IsGenerated(pf.file) {
			measureFuncs(pf.fset, pf.file, path.Dir(pf.rel), out)
		}
	})
	return out
}

// TestFunctionSize fails when a function outside oversize is over a limit,
// and when one in oversize is now within both (remove it: the list only
// shrinks).
func TestFunctionSize(t *testing.T) {
	funcs := moduleFuncs(t)
	keys := make([]string, 0, len(funcs))
	for k := range funcs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	offenders := 0
	for _, k := range keys {
		s := funcs[k]
		_, listed := oversize[k]
		switch {
		case s.over() && !listed:
			t.Errorf("%s: %s has %d lines and complexity %d (limits %d and %d): split it into steps a reader can follow", s.where, k, s.lines, s.complexity, maxFuncLines, maxFuncComplexity)
		case !s.over() && listed:
			t.Errorf("%s: %s is within the limits now (%d lines, complexity %d): remove it from oversize", s.where, k, s.lines, s.complexity)
		}
		if s.over() {
			offenders++
		}
	}
	var gone []string
	for k := range oversize {
		if _, ok := funcs[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	if len(gone) > 0 {
		t.Errorf("oversize names functions that no longer exist (remove them): %v", gone)
	}
	t.Logf("%d functions over %d lines or complexity %d (%d listed in oversize)", offenders, maxFuncLines, maxFuncComplexity, len(oversize))
}

// TestComplexityCounts checks the measure on functions of known shape.
func TestComplexityCounts(t *testing.T) {
	src := `package p

func straight() { _ = 1 }

func branches(a, b bool, xs []int, ch chan int) {
	if a && b || !a {
	}
	for i := 0; i < 1; i++ {
	}
	for range xs {
	}
	switch {
	case a:
	case b:
	default:
	}
	select {
	case <-ch:
	default:
	}
	f := func() {
		if a {
		}
	}
	_ = f
}

func (r *T) long() {
	_ = 1
	_ = 2
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]funcSize{}
	measureFuncs(fset, f, "p", got)
	// branches: 1 + if + && + || + for + range + 2 cases + 1 comm + the
	// literal's if = 10.
	for k, want := range map[string]funcSize{
		"p.straight": {lines: 1, complexity: 1},
		"p.branches": {lines: 22, complexity: 10},
		"p.T.long":   {lines: 4, complexity: 1},
	} {
		if g := got[k]; g.lines != want.lines || g.complexity != want.complexity {
			t.Errorf("%s: %d lines, complexity %d; want %d and %d", k, g.lines, g.complexity, want.lines, want.complexity)
		}
	}
}
