package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyCommandsWriteToTheTerminal: no library package writes to the
// process's own stdout or stderr (os.Stdout, os.Stderr, fmt.Print*, the
// log package's default logger, print, println). Only commands do, through
// one sandbox/shown.Writer each (cmd/bcode's TestOutputGoesThroughShown),
// so text from the worktree, a test run or the model cannot reach a
// terminal around the sanitizer.
func TestOnlyCommandsWriteToTheTerminal(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil // a command: checked by its own test
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if what := terminalWrite(n); what != "" {
				t.Errorf("%s: %s: a library package writes to the terminal around sandbox/shown; take an io.Writer from the command", fset.Position(n.Pos()), what)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the test would pass vacuously", checked)
	}
}

func terminalWrite(n ast.Node) string {
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
		case pkg.Name == "log" && (strings.HasPrefix(n.Sel.Name, "Print") || strings.HasPrefix(n.Sel.Name, "Fatal") || strings.HasPrefix(n.Sel.Name, "Panic")):
			return name
		}
	case *ast.CallExpr:
		if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
			return id.Name
		}
	}
	return ""
}
