package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputGoesThroughShown keeps run's choke point the only way out:
// no file of the command writes to the process's own stdout or stderr
// (os.Stdout, os.Stderr, fmt.Print*, print, log.*) except main, which
// hands them to run, and the gocache subcommand, whose stdout is a binary
// protocol for the container, not text for a person.
func TestOutputGoesThroughShown(t *testing.T) {
	allowed := map[string]bool{
		"main.go:main:os.Stdout": true, "main.go:main:os.Stderr": true,
		"sandbox.go:cmdSandboxGoCache:os.Stdout": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				what := directOutput(n)
				if what == "" {
					return true
				}
				if key := name + ":" + fn.Name.Name + ":" + what; !allowed[key] {
					t.Errorf("%s: %s in %s writes around run's shown.Writer: print through the stdout and stderr run passes in",
						fset.Position(n.Pos()), what, fn.Name.Name)
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: the test would pass vacuously", checked)
	}
}

// directOutput names n when it reaches the process's own output: a
// selector os.Stdout, os.Stderr, fmt.Print*, log.*, or a call of print or
// println.
func directOutput(n ast.Node) string {
	switch n := n.(type) {
	case *ast.SelectorExpr:
		pkg, ok := n.X.(*ast.Ident)
		if !ok {
			return ""
		}
		name := pkg.Name + "." + n.Sel.Name
		switch {
		case name == "os.Stdout", name == "os.Stderr":
			return name
		case pkg.Name == "fmt" && strings.HasPrefix(n.Sel.Name, "Print"):
			return name
		case pkg.Name == "log" || pkg.Name == "slog":
			return name
		}
	case *ast.CallExpr:
		if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
			return id.Name
		}
	}
	return ""
}
