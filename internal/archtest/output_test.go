package archtest

import (
	"go/ast"
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
	eachProductionFile(t, func(pf productionFile) {
		if pf.file.Name.Name == "main" {
			return // a command: checked by its own test
		}
		ast.Inspect(pf.file, func(n ast.Node) bool {
			if what := terminalWrite(n); what != "" {
				t.Errorf("%s: %s: a library package writes to the terminal around sandbox/shown; take an io.Writer from the command", pf.fset.Position(n.Pos()), what)
			}
			return true
		})
	})
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
