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

// productionFile is one non-test .go file of the module, parsed with its
// comments; rel is its slash path from the module root.
type productionFile struct {
	rel  string
	fset *token.FileSet
	file *ast.File
}

// eachProductionFile calls fn on every non-test .go file of the module
// (all platforms' files; hidden, testdata, node_modules and vendor
// directories left out), and fails the test when it found so few that a
// rule over them would pass vacuously.
func eachProductionFile(t *testing.T, fn func(productionFile)) {
	t.Helper()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files++
		fn(productionFile{rel: filepath.ToSlash(rel), fset: fset, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("found only %d files: a rule over them would check nothing", files)
	}
}
