package golang

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

var _ verify.SetupDescriber = (*Adapter)(nil)

// DescribeSetup implements verify.SetupDescriber: what a test file assigns
// before any test runs, to names it does not declare itself: in init
// functions, in TestMain, and in the function literals package variables'
// initializers call. That is how a test file swaps a package variable the
// code under test calls (a function, a clock) for a copy of its own.
func (a *Adapter) DescribeSetup(p string, src []byte) string {
	if !a.IsTestFile(p) || src == nil {
		return ""
	}
	f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.SkipObjectResolution)
	if err != nil {
		return ""
	}
	own := map[string]bool{} // the file's own package-level names
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if v, ok := s.(*ast.ValueSpec); ok {
					for _, n := range v.Names {
						own[n.Name] = true
					}
				}
			}
		}
	}
	var parts []string
	add := func(where string, body ast.Node) {
		if names := assignedOutside(body, own); len(names) > 0 {
			parts = append(parts, fmt.Sprintf("%s assigns %s", where, strings.Join(names, ", ")))
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Body != nil && (d.Name.Name == "init" || d.Name.Name == "TestMain") {
				add(d.Name.Name, d.Body)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if v, ok := s.(*ast.ValueSpec); ok {
					for _, x := range v.Values {
						add("a package variable's initializer", x)
					}
				}
			}
		}
	}
	return strings.Join(parts, "; ")
}

// assignedOutside lists, sorted, the names n assigns with = that neither
// n declares (:=, var, parameters) nor own holds: package variables of the
// code under test, or another package's (pkg.Name).
func assignedOutside(n ast.Node, own map[string]bool) []string {
	local := map[string]bool{}
	ast.Inspect(n, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						local[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				local[id.Name] = true
			}
		case *ast.Field:
			for _, id := range x.Names {
				local[id.Name] = true
			}
		}
		return true
	})
	seen := map[string]bool{}
	ast.Inspect(n, func(x ast.Node) bool {
		as, ok := x.(*ast.AssignStmt)
		if !ok || as.Tok != token.ASSIGN {
			return true
		}
		for _, l := range as.Lhs {
			name := assignedName(l)
			root, _, _ := strings.Cut(name, ".")
			if name == "" || name == "_" || local[root] || own[root] {
				continue
			}
			seen[name] = true
		}
		return true
	})
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// assignedName is what an assignment's left side names: x, pkg.X, *p
// as p.
func assignedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x := assignedName(e.X); x != "" {
			return x + "." + e.Sel.Name
		}
	case *ast.StarExpr:
		return assignedName(e.X)
	case *ast.ParenExpr:
		return assignedName(e.X)
	case *ast.IndexExpr:
		return assignedName(e.X)
	}
	return ""
}

// DeclaresTests implements verify.TestDeclarer: a _test.go file with a
// test, benchmark, fuzz test or example go test runs. A file that does not
// parse is taken to declare some (it is then no helper the gate can swap).
func (a *Adapter) DeclaresTests(p string, src []byte) bool {
	tf, err := parseTestFile(p, src)
	return err != nil || len(tf.Tests) > 0 || hasBenchmark(src)
}

// hasBenchmark reports whether src declares a top-level Benchmark
// function (parseTestFile keeps the functions whose outcomes the gate
// compares; a benchmark runs under go test too).
func hasBenchmark(src []byte) bool {
	return strings.Contains(string(src), "\nfunc Benchmark")
}
