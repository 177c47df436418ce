package codegraph

import (
	"context"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path"

	"golang.org/x/tools/go/packages"

	"github.com/bcode-dev/bcode/sandbox"
)

// listMode is what the Go indexer asks go/packages for: the package graph
// as `go list -deps -test` prints it, and nothing that compiles. Asking
// for types (NeedTypes) makes go/packages run `go list -export`, which
// compiles every dependency, the standard library first, into a build
// cache: half a minute on two cores with a cold cache, before an agent's
// first model request. The index needs types only to resolve names to the
// repository's own symbols, so sourceChecker type-checks the module's
// packages from the parsed files and stands empty packages in for the
// rest.
// (NeedCompiledGoFiles is off as well: it makes `go list -compiled` run
// the build's preparation steps, which fill the build cache; with cgo off
// the compiled files are the Go files.)
const listMode = packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps

// sourceChecker type-checks a module's packages (and their test variants)
// from source, in import order, each once. An import from outside the
// module — the standard library, a dependency — is an empty, complete
// package of the right path and name: names read from it are undefined,
// go/types gives their expressions the invalid type and goes on, and what
// the index records (edges between the repository's own symbols, method
// sets of its own types) does not depend on them. What is lost is an edge
// reached only through an outside package's types (a method of one of the
// repository's types called on the result of a standard library call) and
// methods promoted from an embedded outside type.
type sourceChecker struct {
	ctx      context.Context
	repo     string // the shadow copy the go command listed
	inModule func(path string) bool
	fset     *token.FileSet
	sources  map[string][]byte // file name -> content, for files inside repo
	done     map[string]*packages.Package
	busy     map[string]bool // being checked: an import cycle gets a stub
	stubs    map[string]*types.Package
	sizes    types.Sizes
	// indexed are the IDs of the packages the load indexes. Any other
	// package is checked only to be imported (the plain variant of a
	// package whose test variant is indexed, a directory not in the
	// load): its function bodies are skipped and nothing of its syntax
	// or type information is kept, as gopls does for dependencies.
	indexed map[string]bool
}

func newSourceChecker(ctx context.Context, repo string, inModule func(string) bool) *sourceChecker {
	return &sourceChecker{
		ctx: ctx, repo: repo, inModule: inModule, fset: token.NewFileSet(),
		sources: map[string][]byte{}, done: map[string]*packages.Package{}, busy: map[string]bool{},
		stubs: map[string]*types.Package{}, sizes: types.SizesFor("gc", "amd64"),
	}
}

// own reports whether p is one of the repository's packages: its path is
// in the module and its files are in the copy (not a nested module's in
// the module cache).
func (c *sourceChecker) own(p *packages.Package) bool {
	if p == nil || !c.inModule(p.PkgPath) || len(p.GoFiles) == 0 {
		return false
	}
	for _, f := range p.GoFiles {
		if _, inside := relPath(c.repo, f); !inside {
			return false
		}
	}
	return true
}

// check returns p type-checked from its files: a copy of p with Syntax,
// Types, TypesInfo and Fset set, CompiledGoFiles the files parsed (in
// Syntax's order) and its parse errors appended to Errors.
func (c *sourceChecker) check(p *packages.Package) *packages.Package {
	if done, ok := c.done[p.ID]; ok {
		return done
	}
	c.busy[p.ID] = true
	defer delete(c.busy, p.ID)
	out := *p
	out.Errors = append([]packages.Error(nil), p.Errors...)
	out.Fset = c.fset
	out.CompiledGoFiles = nil
	keep := c.indexed == nil || c.indexed[p.ID]
	for _, name := range p.GoFiles {
		f, err := c.parse(name, keep)
		if f == nil {
			out.Errors = append(out.Errors, packages.Error{Pos: name, Msg: "unreadable", Kind: packages.ParseError})
			continue
		}
		if err != nil {
			out.Errors = append(out.Errors, parseErrors(err)...)
		}
		out.CompiledGoFiles = append(out.CompiledGoFiles, name)
		out.Syntax = append(out.Syntax, f)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Implicits: map[ast.Node]types.Object{}}
	if !keep {
		info = &types.Info{}
	}
	conf := types.Config{
		IgnoreFuncBodies: !keep,
		Importer: importerFunc(func(ipath string) (*types.Package, error) {
			return c.importFor(p, ipath), nil
		}),
		Sizes: c.sizes,
		// Type errors are not kept: with stand-ins for the outside
		// packages most of them are artefacts ("undefined:
		// strings.Builder", a "missing return" after a panic whose
		// argument has the invalid type, an import used only in a
		// type assertion on such a value). The gate's build reports the
		// real ones; the index reports load and syntax errors.
		Error: func(error) {},
	}
	if c.ctx.Err() == nil {
		out.Types, _ = conf.Check(p.PkgPath, c.fset, out.Syntax, info)
	}
	if out.Types == nil {
		out.Types = types.NewPackage(p.PkgPath, p.Name)
	}
	if !keep {
		out.Syntax, out.CompiledGoFiles = nil, nil
		c.done[p.ID] = &out
		return &out
	}
	resolveUnchecked(out.Types, out.Syntax, info)
	out.TypesInfo = info
	c.done[p.ID] = &out
	return &out
}

// release drops what indexing p needed and importing it does not: its
// syntax, type information and file contents. Only its types stay, for
// the packages checked after it; so a load's memory is the types of the
// module, not every package's syntax at once.
func (c *sourceChecker) release(p *packages.Package) {
	done, ok := c.done[p.ID]
	if !ok {
		return
	}
	for _, name := range done.CompiledGoFiles {
		delete(c.sources, name)
	}
	slim := *done
	slim.Syntax, slim.TypesInfo = nil, nil
	c.done[p.ID] = &slim
}

// resolveUnchecked names the package-level objects of pkg (and of the
// repository's packages it imports) that go/types never looked up: it
// stops at an operand of the invalid type, so in `v.Interface().(Unmarshaler)`
// on a stand-in's value the asserted type is not recorded. An identifier
// with no definition and no use recorded is resolved the way the
// package's scope would: a bare name in pkg's scope, `p.Name` in the
// scope of the repository package p names. Field and method names after
// a dot (the type of what precedes them is unknown), composite literal
// keys and labels are left alone.
func resolveUnchecked(pkg *types.Package, files []*ast.File, info *types.Info) {
	skip := map[*ast.Ident]bool{}
	for _, f := range files {
		imports := map[string]*types.PkgName{} // the file's names for its imports
		for _, spec := range f.Imports {
			obj := info.Implicits[spec]
			if spec.Name != nil {
				obj = info.Defs[spec.Name]
			}
			if pn, ok := obj.(*types.PkgName); ok {
				imports[pn.Name()] = pn
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				skip[n.Sel] = true
				x, ok := n.X.(*ast.Ident)
				if !ok {
					return true
				}
				pn, ok := info.Uses[x].(*types.PkgName)
				if info.Uses[x] == nil && info.Defs[x] == nil {
					pn, ok = imports[x.Name], imports[x.Name] != nil
				}
				if !ok || info.Uses[n.Sel] != nil || !pn.Imported().Complete() || pn.Imported().Scope().Len() == 0 {
					return true
				}
				if obj := pn.Imported().Scope().Lookup(n.Sel.Name); obj != nil && obj.Exported() {
					info.Uses[n.Sel] = obj
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					skip[id] = true
				}
			case *ast.LabeledStmt:
				skip[n.Label] = true
			case *ast.BranchStmt:
				if n.Label != nil {
					skip[n.Label] = true
				}
			case *ast.Ident:
				if skip[n] || info.Uses[n] != nil || info.Defs[n] != nil {
					return true
				}
				if obj := pkg.Scope().Lookup(n.Name); obj != nil {
					info.Uses[n] = obj
				}
			}
			return true
		})
	}
}

// importFor resolves an import of p: the repository's packages checked
// from source, "unsafe" as itself, anything else a stand-in.
func (c *sourceChecker) importFor(p *packages.Package, ipath string) *types.Package {
	if ipath == "unsafe" {
		return types.Unsafe
	}
	dep := p.Imports[ipath]
	if dep == nil {
		return c.stub(ipath, "")
	}
	if c.own(dep) && !c.busy[dep.ID] {
		return c.check(dep).Types
	}
	return c.stub(dep.PkgPath, dep.Name)
}

// stub is the empty, complete stand-in for an outside package.
func (c *sourceChecker) stub(pkgPath, name string) *types.Package {
	if s, ok := c.stubs[pkgPath]; ok {
		return s
	}
	if name == "" {
		name = path.Base(pkgPath)
	}
	s := types.NewPackage(pkgPath, name)
	s.MarkComplete()
	c.stubs[pkgPath] = s
	return s
}

// maxCheckedSource caps one Go file the checker parses (the copy holds none
// over its own, smaller cap).
const maxCheckedSource = 64 << 20

// parse reads and parses one file of the copy, keeping the bytes of those
// inside it for the index's signatures when keep is set.
func (c *sourceChecker) parse(name string, keep bool) (*ast.File, error) {
	// The copy's files beneath the copy, the rest (the module cache,
	// GOROOT) beneath their own directory: capped either way.
	rel, inside := relPath(c.repo, name)
	var src []byte
	var err error
	if inside {
		src, err = sandbox.ReadFile(c.repo, rel, maxCheckedSource)
	} else {
		src, err = sandbox.ReadPath(name, maxCheckedSource)
	}
	if err != nil {
		return nil, err
	}
	if inside && keep {
		c.sources[name] = src
	}
	if !keep {
		return parser.ParseFile(c.fset, name, src, parser.SkipObjectResolution)
	}
	return parser.ParseFile(c.fset, name, src, parser.AllErrors|parser.ParseComments)
}

// parseErrors turns a parser error into go/packages errors.
func parseErrors(err error) []packages.Error {
	list, ok := err.(scanner.ErrorList)
	if !ok {
		return []packages.Error{{Msg: err.Error(), Kind: packages.ParseError}}
	}
	out := make([]packages.Error, 0, len(list))
	for _, e := range list {
		out = append(out, packages.Error{Pos: e.Pos.String(), Msg: e.Msg, Kind: packages.ParseError})
	}
	return out
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
