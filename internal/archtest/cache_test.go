package archtest

import (
	"go/ast"
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
	eachProductionFile(t, func(pf productionFile) {
		if cacheDirCallers[pf.rel] || strings.HasPrefix(pf.rel, "engine/bench/perf/") {
			return
		}
		ast.Inspect(pf.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && n.Sel.Name == "UserCacheDir" {
					t.Errorf("%s: os.UserCacheDir: bcode's caches live where sandbox.CacheDir says", pf.fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				if readsXDGCache(n) {
					t.Errorf("%s: reads $XDG_CACHE_HOME: bcode's caches live where sandbox.CacheDir says", pf.fset.Position(n.Pos()))
				}
			}
			return true
		})
	})
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
