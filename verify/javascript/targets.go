package javascript

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/tdewolff/parse/v2/js"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// maxSource caps a file Targets parses for its imports.
const maxSource = 4 << 20

// configFiles decide how every test runs: a change to one reaches them all.
var configFiles = map[string]bool{"package.json": true, "tsconfig.json": true, "jsconfig.json": true}

// isRunnerConfig reports the configuration files of vitest, vite and
// jest, and babel's, which jest's default transform reads.
func isRunnerConfig(base string) bool {
	return slices.Contains(vitestConfigs, base) || slices.Contains(viteConfigs, base) || slices.Contains(jestConfigs, base) ||
		base == ".babelrc" || strings.HasPrefix(base, "babel.config.")
}

// Targets implements verify.Adapter: the test files that import a changed
// file, directly or through other files, by relative import, export-from,
// require() or import() of a literal path. A changed package.json,
// tsconfig.json or runner configuration (vitest.config.*, vite.config.*,
// jest.config.*, babel's) reaches every test file.
func (a *Adapter) Targets(ctx context.Context, _ sandbox.Runner, dir string, change *verify.Change) ([]string, error) {
	files, err := a.jsFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("listing javascript files in %s: %w", dir, err)
	}
	var tests []string
	for _, f := range files {
		if a.IsTestFile(f) {
			tests = append(tests, f)
		}
	}
	reached := map[string]bool{}
	for _, f := range change.Files {
		if b := path.Base(f.Path); configFiles[b] || isRunnerConfig(b) {
			return tests, nil
		}
		if a.Owns(f.Path) {
			reached[f.Path] = true
		}
	}
	out := []string{}
	if len(reached) == 0 {
		return out, nil
	}
	present := map[string]bool{}
	for _, f := range files {
		present[f] = true
	}
	imports := map[string][]string{} // file -> the files it imports
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		imports[f] = localImports(dir, f, present)
	}
	for _, t := range tests {
		if reaches(t, imports, reached) {
			out = append(out, t)
		}
	}
	return out, nil
}

// reaches reports whether from imports (transitively) a reached file, or is
// one.
func reaches(from string, imports map[string][]string, reached map[string]bool) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[f] {
			continue
		}
		seen[f] = true
		if reached[f] {
			return true
		}
		stack = append(stack, imports[f]...)
	}
	return false
}

// localImports are the repository files f imports by relative path; a file
// that does not parse imports nothing bcode can see.
func localImports(dir, f string, present map[string]bool) []string {
	src, err := sandbox.ReadFile(dir, f, maxSource)
	if err != nil {
		return nil
	}
	ast, err := parseFile(f, src)
	if err != nil {
		return nil
	}
	c := &importFinder{}
	js.Walk(c, ast)
	var out []string
	for _, spec := range c.specs {
		if p, ok := resolve(path.Dir(f), spec, present); ok {
			out = append(out, p)
		}
	}
	return out
}

// resolveExts are tried, in node's and bundlers' order, after a specifier
// without one; then the same names as a directory's index.
var resolveExts = []string{"", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"}

// resolve finds the file a relative specifier names from directory from.
// TypeScript's ESM convention of importing "./x.js" for x.ts is honoured.
func resolve(from, spec string, present map[string]bool) (string, bool) {
	if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") && spec != "." && spec != ".." {
		return "", false
	}
	p := path.Join(from, spec)
	if strings.HasPrefix(p, "../") || p == ".." {
		return "", false
	}
	for _, ext := range resolveExts {
		if present[p+ext] {
			return p + ext, true
		}
	}
	for _, ext := range resolveExts[1:] {
		if present[p+"/index"+ext] {
			return p + "/index" + ext, true
		}
	}
	if stem, ok := strings.CutSuffix(p, path.Ext(p)); ok && path.Ext(p) != "" {
		for _, ext := range []string{".ts", ".tsx", ".mts", ".cts"} {
			if present[stem+ext] {
				return stem + ext, true
			}
		}
	}
	return "", false
}

// importFinder collects the module specifiers of import and export-from
// statements and of require() and import() calls with a literal argument.
type importFinder struct{ specs []string }

func (c *importFinder) Exit(js.INode) {}

func (c *importFinder) Enter(n js.INode) js.IVisitor {
	switch v := n.(type) {
	case *js.ImportStmt:
		c.add(v.Module)
	case *js.ExportStmt:
		c.add(v.Module)
	case *js.CallExpr:
		if len(v.Args.List) == 0 || !loads(v.X) {
			break
		}
		if s, ok := literalString(v.Args.List[0].Value); ok {
			c.specs = append(c.specs, s)
		}
	}
	return c
}

// add records a statement's module, a quoted literal (nil: none).
func (c *importFinder) add(module []byte) {
	if len(module) == 0 {
		return
	}
	if s, ok := unquote(module); ok {
		c.specs = append(c.specs, s)
	}
}

// loads reports whether a call's callee is require or import().
func loads(x js.IExpr) bool {
	switch v := x.(type) {
	case *js.Var:
		return string(v.Data) == "require"
	case *js.LiteralExpr:
		return v.TokenType == js.ImportToken
	}
	return false
}
