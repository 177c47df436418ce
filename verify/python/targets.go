package python

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// maxSourceBytes is the largest Python file whose imports are read; bigger
// files are generated data, not code that imports the change.
const maxSourceBytes = 4 << 20

// moduleNames are the dotted names a file may be imported as. Every suffix
// counts, because the import root is not known: src/pkg/mod.py is
// "src.pkg.mod", "pkg.mod" and "mod". Over-matching only runs more tests.
func moduleNames(file string) []string {
	p := strings.TrimSuffix(file, ".py")
	p = strings.TrimSuffix(p, "/__init__")
	if p == "__init__" {
		return nil
	}
	parts := strings.Split(p, "/")
	out := make([]string, 0, len(parts))
	for i := range parts {
		out = append(out, strings.Join(parts[i:], "."))
	}
	return out
}

// packageOf is the package a file's relative imports start from.
func packageOf(file string) []string {
	d := path.Dir(file)
	if d == "." {
		return nil
	}
	return strings.Split(d, "/")
}

// importedNames resolves a file's imports to the dotted names they load:
// "import a.b" loads a.b, "from a import b" loads a and maybe a.b, and
// relative imports are resolved against the file's directory.
func importedNames(file string, imps []pyImport) []string {
	var out []string
	for _, im := range imps {
		mod := im.Module
		if im.Level > 0 {
			pkg := packageOf(file)
			up := im.Level - 1
			if up > len(pkg) {
				continue // beyond the top: an import error, reaches nothing
			}
			base := strings.Join(pkg[:len(pkg)-up], ".")
			switch {
			case base == "":
			case mod == "":
				mod = base
			default:
				mod = base + "." + mod
			}
		}
		if mod == "" {
			continue
		}
		out = append(out, mod)
		for _, n := range im.Names {
			if n != "*" {
				out = append(out, mod+"."+n)
			}
		}
	}
	return out
}

// importGraph indexes files by the names they may be imported as.
type importGraph struct {
	exact map[string][]string // module name -> files
}

func newImportGraph(files []string) *importGraph {
	g := &importGraph{exact: map[string][]string{}}
	for _, f := range files {
		for _, n := range moduleNames(f) {
			g.exact[n] = append(g.exact[n], f)
		}
	}
	return g
}

// resolve lists the files an imported name may load: the module itself and
// the packages above it (their __init__ runs first). The modules a
// package's __init__ imports in turn are reached through its own imports.
func (g *importGraph) resolve(name string) []string {
	var out []string
	out = append(out, g.exact[name]...)
	for i := strings.LastIndexByte(name, '.'); i > 0; i = strings.LastIndexByte(name[:i], '.') {
		out = append(out, g.exact[name[:i]]...)
	}
	return out
}

// Targets implements verify.Adapter: the changed test files, and the test
// files that import (directly or through other modules) a changed module,
// sorted. A changed conftest.py reaches the tests below it; a changed
// pytest configuration reaches every test.
func (a *Adapter) Targets(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change) ([]string, error) {
	files, err := pyFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("listing python files in %s: %w", dir, err)
	}
	present := map[string]bool{}
	var tests []string
	for _, f := range files {
		present[f] = true
		if a.IsTestFile(f) {
			tests = append(tests, f)
		}
	}
	reached := map[string]bool{}
	var changedPy []string
	everything := false
	for _, f := range change.Files {
		switch {
		case path.Base(f.Path) != "conftest.py" && configFiles[path.Base(f.Path)]:
			everything = true
		case strings.HasSuffix(f.Path, ".py"):
			changedPy = append(changedPy, f.Path)
			reached[f.Path] = true
		}
	}
	if everything {
		return tests, nil
	}
	if len(changedPy) == 0 {
		return []string{}, nil
	}

	infos, err := a.readImports(ctx, r, dir, files)
	if err != nil {
		return nil, err
	}
	reachImporters(infos, files, changedPy, reached)

	out := []string{}
	for _, t := range tests {
		if reached[t] || underReachedConftest(t, reached) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// readImports reads every file's imports in one run of the helper.
func (a *Adapter) readImports(ctx context.Context, r sandbox.Runner, dir string, files []string) ([]fileInfo, error) {
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	var srcs []source
	for _, f := range files {
		data, err := conf.ReadFile(f, maxSourceBytes+1)
		if err != nil || len(data) > maxSourceBytes {
			continue
		}
		srcs = append(srcs, source{Path: f, Source: data})
	}
	py, err := a.interpreter(ctx, r, dir)
	if err != nil {
		if !errors.Is(err, ErrNoPytest) {
			return nil, err
		}
		py = ""
	}
	if py != "" {
		return runHelper(ctx, r, py, dir, modeImports, srcs)
	}
	// Imports parse without pytest; any interpreter will do.
	return a.parseNoDir(ctx, modeImports, srcs)
}

// reachImporters adds to reached every file that imports a changed one,
// directly or through other modules. Deleted modules are indexed too, so
// the tests still importing them are reached.
func reachImporters(infos []fileInfo, files, changedPy []string, reached map[string]bool) {
	// Reverse edges: file -> the files that import it.
	g := newImportGraph(append(append([]string(nil), files...), changedPy...))
	importers := map[string][]string{}
	for _, info := range infos {
		if info.Error != nil {
			continue
		}
		for _, name := range importedNames(info.Path, info.Imports) {
			for _, f := range g.resolve(name) {
				if f != info.Path {
					importers[f] = append(importers[f], info.Path)
				}
			}
		}
	}
	queue := append([]string(nil), changedPy...)
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, imp := range importers[f] {
			if !reached[imp] {
				reached[imp] = true
				queue = append(queue, imp)
			}
		}
	}
}

// underReachedConftest reports whether a conftest.py in t's directory or
// above it was changed or reached: its fixtures and hooks apply to t.
func underReachedConftest(t string, reached map[string]bool) bool {
	for d := path.Dir(t); ; d = path.Dir(d) {
		c := "conftest.py"
		if d != "." {
			c = d + "/conftest.py"
		}
		if reached[c] {
			return true
		}
		if d == "." || d == "/" {
			return false
		}
	}
}
