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

// cacheDirCallers may ask for the user's cache directory themselves:
// sandbox.CacheDir, the one place bcode's caches are decided, and the
// host runner, which asks only to pin the go command's own build cache
// (the user's, not bcode's).
var cacheDirCallers = map[string]bool{
	"sandbox/cachedir.go":  true,
	"sandbox/host/host.go": true,
}

// TestCachesGoThroughCacheDir: no production package computes where
// bcode's caches live (os.UserCacheDir, $XDG_CACHE_HOME) on its own, so
// `bcode --cache DIR` moves every cache and a cold benchmark is cold for
// all of them (issue 33).
func TestCachesGoThroughCacheDir(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || cacheDirCallers[rel] || strings.HasPrefix(rel, "engine/bench/perf/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && n.Sel.Name == "UserCacheDir" {
					t.Errorf("%s: os.UserCacheDir: bcode's caches live where sandbox.CacheDir says", fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				if readsXDGCache(n) {
					t.Errorf("%s: reads $XDG_CACHE_HOME: bcode's caches live where sandbox.CacheDir says", fset.Position(n.Pos()))
				}
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

// readsXDGCache reports whether call is os.Getenv or os.LookupEnv of
// XDG_CACHE_HOME.
func readsXDGCache(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "os" || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
		return false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	return ok && lit.Value == `"XDG_CACHE_HOME"`
}
