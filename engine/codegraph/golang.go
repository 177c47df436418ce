package codegraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/gotool"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// indexGo lists the packages of dirs (repository-relative, "." for the
// root) with their tests, type-checks them from source (sourceChecker) and
// returns one unit per directory. The go command runs over a shadow copy
// of the tree (makeShadow), never the tree itself, with bcode's hardened
// environment (gotool: no cgo, no network, no toolchain switch, no user
// configuration, limits on the tools it starts), so nothing the tree
// points at outside itself is read and a hostile package cannot make the
// host spend without bound. It only lists: nothing is compiled.
//
// The listing is one go command with its own deadline (lo.listDeadline);
// the packages are then checked and indexed one directory at a time in
// lo's order (the selection's first, then by import distance from it).
// When lo.checkDeadline passes first, the directories done so far are
// returned and the rest are in the load's pending list: a partial index,
// never an error, and the next Index picks up where this one stopped.
func indexGo(ctx context.Context, conf *sandbox.Confined, module string, dirs []string, lo loadOptions) (*goLoad, error) {
	repo, err := scratch.MkdirTemp("bcode-index-*")
	if err != nil {
		return nil, fmt.Errorf("codegraph: %w", err)
	}
	defer os.RemoveAll(repo)
	if _, err := makeShadow(conf, repo); err != nil {
		return nil, err
	}
	chosen, err := listGo(ctx, repo, dirs, lo.listDeadline, lo.load)
	if err != nil {
		return nil, err
	}
	inModule := func(p string) bool {
		p = strings.TrimSuffix(p, "_test")
		return p == module || strings.HasPrefix(p, module+"/")
	}
	byDir := map[string][]*packages.Package{}
	for _, p := range chosen {
		byDir[pkgDir(repo, p)] = append(byDir[pkgDir(repo, p)], p)
	}
	order := relevanceOrder(dirs, lo.first, dirImports(repo, chosen, inModule))
	cctx, cancel := context.WithTimeout(ctx, lo.checkDeadline)
	defer cancel()
	chk := newSourceChecker(cctx, repo, inModule)
	chk.indexed = map[string]bool{}
	for _, p := range chosen {
		chk.indexed[p.ID] = true
	}
	out := &goLoad{units: map[string]*Unit{}}
	for i, d := range order {
		if cctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("loading Go packages: %w", ctx.Err())
			}
			out.pending = append(out.pending, order[i:]...)
			break
		}
		t0 := time.Now()
		u := &Unit{Dir: d}
		for _, p := range byDir[d] {
			if chk.own(p) {
				p = chk.check(p)
			}
			ix := &goIndexer{module: module, repo: repo, pkg: p, unit: u, sources: chk.sources, seen: map[Edge]bool{}}
			ix.run()
			chk.release(p)
		}
		if cctx.Err() != nil && ctx.Err() == nil {
			// Checked against a deadline that passed mid-way: what go/types
			// recorded is partial, so this directory is pending too.
			out.pending = append(out.pending, order[i:]...)
			break
		}
		u.finish(time.Since(t0))
		out.units[d] = u
		if lo.progress != nil {
			lo.progress(len(out.units), len(order), d)
		}
	}
	slices.Sort(out.pending)
	return out, nil
}

// goLoad is what indexGo indexed: a unit per directory done, and the
// directories it did not reach before its deadline.
type goLoad struct {
	units   map[string]*Unit
	pending []string
}

// finish sorts what the indexer appended and records how long the
// directory took (the measurement its next deadline is derived from).
func (u *Unit) finish(took time.Duration) {
	slices.Sort(u.Pkgs)
	u.Pkgs = slices.Compact(u.Pkgs)
	slices.Sort(u.Imports)
	u.Imports = slices.Compact(u.Imports)
	slices.SortFunc(u.Symbols, func(a, b Symbol) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(u.Edges, compareEdges)
	u.Took = took
}

// listGo runs the one go command of a load, `go list -deps -test` over
// dirs in the copy at repo, within deadline, and picks one variant per
// package path of those in dirs: the test variant ("p [p.test]") holds
// every file the plain one does plus the in-package tests.
func listGo(ctx context.Context, repo string, dirs []string, deadline time.Duration, load sandbox.Load) ([]*packages.Package, error) {
	tc, err := gotool.Shared(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cfg := &packages.Config{
		Context: lctx,
		Mode:    listMode,
		Dir:     repo,
		Env:     append(tc.OfflineEnv(gotool.ModFlag(repo)), scratch.Env()),
		Tests:   true,
	}
	if te := gotool.ToolExec(gotool.DefaultLimits); te != "" {
		cfg.BuildFlags = []string{"-toolexec=" + te}
	}
	patterns := make([]string, len(dirs))
	for i, d := range dirs {
		if d == "." {
			patterns[i] = "."
		} else {
			patterns[i] = "./" + d
		}
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		if lctx.Err() != nil && ctx.Err() == nil {
			return nil, &listError{why: fmt.Sprintf("go list did not finish within its deadline of %s (%s)", deadline.Round(time.Second), load), err: lctx.Err()}
		}
		return nil, &listError{why: listFailure(err), err: err}
	}
	want := map[string]bool{}
	for _, d := range dirs {
		want[d] = true
	}
	chosen := map[string]*packages.Package{}
	for _, p := range pkgs {
		if strings.HasSuffix(p.ID, ".test") || p.Name == "" && len(p.GoFiles) == 0 || !want[pkgDir(repo, p)] {
			continue
		}
		if old, ok := chosen[p.PkgPath]; !ok || len(p.GoFiles) > len(old.GoFiles) {
			chosen[p.PkgPath] = p
		}
	}
	out := make([]*packages.Package, 0, len(chosen))
	for _, p := range chosen {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	return out, nil
}

// listError is a failed listing: why is a fixed sentence a pack can show
// (never the go command's output, which quotes the agent's code).
type listError struct {
	why string
	err error
}

func (e *listError) Error() string { return "loading Go packages: " + e.why + ": " + e.err.Error() }
func (e *listError) Unwrap() error { return e.err }

// listFailure names what made go list fail, as far as a fixed sentence
// can: the index runs offline, so a dependency missing from the module
// cache is the usual cause.
func listFailure(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "go: downloading"), strings.Contains(msg, "GOPROXY=off"), strings.Contains(msg, "missing go.sum entry"):
		return "go list needs module dependencies that are not in the module cache (the index runs offline; go mod download fetches them)"
	case strings.Contains(msg, "signal: killed"):
		return "go list was killed (memory or CPU limit)"
	}
	return "go list failed"
}

// WhyFailed is the fixed sentence saying why Index failed, for a pack's
// note: never the tool's own message.
func WhyFailed(err error) string {
	var le *listError
	if errors.As(err, &le) {
		return le.why
	}
	return "the Go index failed"
}

// dirImports maps each listed directory to the directories of the
// module's packages it imports.
func dirImports(repo string, pkgs []*packages.Package, inModule func(string) bool) map[string][]string {
	out := map[string][]string{}
	for _, p := range pkgs {
		d := pkgDir(repo, p)
		for path, imp := range p.Imports {
			if inModule(path) {
				if id := pkgDir(repo, imp); id != "" && id != d {
					out[d] = append(out[d], id)
				}
			}
		}
	}
	return out
}

// relevanceOrder is the order a load indexes dirs in: first's directory,
// then the rest by import distance from it (imports and importers alike,
// breadth first, each ring sorted), then the unreachable ones sorted. No
// first: sorted.
func relevanceOrder(dirs []string, first string, imports map[string][]string) []string {
	sorted := slices.Clone(dirs)
	slices.Sort(sorted)
	if first == "" || !slices.Contains(sorted, first) {
		return sorted
	}
	near := map[string][]string{}
	for d, imps := range imports {
		for _, i := range imps {
			near[d] = append(near[d], i)
			near[i] = append(near[i], d)
		}
	}
	live := map[string]bool{}
	for _, d := range sorted {
		live[d] = true
	}
	seen := map[string]bool{first: true}
	out := []string{first}
	for ring := []string{first}; len(ring) > 0; {
		var next []string
		for _, d := range ring {
			for _, n := range near[d] {
				if !seen[n] && live[n] {
					seen[n] = true
					next = append(next, n)
				}
			}
		}
		slices.Sort(next)
		out = append(out, next...)
		ring = next
	}
	for _, d := range sorted {
		if !seen[d] {
			out = append(out, d)
		}
	}
	return out
}

// pkgDir is the repository-relative directory of a loaded package.
func pkgDir(repo string, p *packages.Package) string {
	files := p.GoFiles
	if len(files) == 0 {
		files = p.CompiledGoFiles
	}
	for _, f := range files {
		if rel, ok := relPath(repo, filepath.Dir(f)); ok {
			return rel
		}
	}
	return ""
}

// relPath returns name relative to repo with slashes, and whether it lies
// inside it.
func relPath(repo, name string) (string, bool) {
	rel, err := filepath.Rel(repo, name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

type goIndexer struct {
	module  string
	repo    string
	pkg     *packages.Package
	unit    *Unit
	sources map[string][]byte
	seen    map[Edge]bool
}

func (ix *goIndexer) run() {
	p, u := ix.pkg, ix.unit
	u.Pkgs = append(u.Pkgs, p.PkgPath)
	for imp := range p.Imports {
		if ix.inModule(imp) {
			u.Imports = append(u.Imports, imp)
		}
	}
	for _, e := range p.Errors {
		if len(u.Errors) < 20 {
			u.Errors = append(u.Errors, ix.errorSentence(e))
		}
	}
	if p.TypesInfo == nil || p.Fset == nil {
		return
	}
	for i, f := range p.Syntax {
		if i >= len(p.CompiledGoFiles) {
			break
		}
		name := p.CompiledGoFiles[i]
		rel, inside := relPath(ix.repo, name)
		if !inside {
			continue // cgo output in the build cache
		}
		ix.file(f, rel, ix.sources[name])
	}
}

// errorSentence is what the index keeps of a load, parse or type error: a
// fixed sentence naming the package, the kind of error and where it is in
// the tree. Never the tool's message: it quotes what it read, and what it
// read is the agent's (or, before the shadow copy, a host file's).
func (ix *goIndexer) errorSentence(e packages.Error) string {
	kind := "load"
	switch e.Kind {
	case packages.ParseError:
		kind = "syntax"
	case packages.TypeError:
		kind = "type"
	}
	where := ""
	if file, line, ok := splitPos(e.Pos); ok {
		if rel, inside := relPath(ix.repo, file); inside {
			where = fmt.Sprintf(" at %s:%d", rel, line)
		}
	}
	return fmt.Sprintf("package %s has a %s error%s (the tool's message is not kept)", ix.pkg.PkgPath, kind, where)
}

// splitPos parses a go/packages position, "file:line:col" or "file:line".
func splitPos(pos string) (string, int, bool) {
	file, last, ok := cutLastNumber(pos)
	if !ok {
		return "", 0, false
	}
	if f, line, ok := cutLastNumber(file); ok {
		return f, line, true
	}
	return file, last, true
}

// cutLastNumber splits "s:N" into s and N > 0.
func cutLastNumber(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

func (ix *goIndexer) inModule(p string) bool {
	p = strings.TrimSuffix(p, "_test")
	return p == ix.module || strings.HasPrefix(p, ix.module+"/")
}

func (ix *goIndexer) file(f *ast.File, rel string, src []byte) {
	isTestFile := strings.HasSuffix(rel, "_test.go")
	info := ix.pkg.TypesInfo
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			fn, ok := info.Defs[d.Name].(*types.Func)
			if !ok {
				continue
			}
			id := funcID(fn)
			if id == "" {
				continue
			}
			kind := KindFunc
			if d.Recv != nil {
				kind = KindMethod
			}
			sigEnd := d.End()
			if d.Body != nil {
				sigEnd = d.Body.Lbrace
			}
			ix.symbol(Symbol{
				ID: id, Name: d.Name.Name, Kind: kind, Pkg: ix.pkg.PkgPath, File: rel,
				Line: ix.line(docOr(d.Doc, d.Pos())), EndLine: ix.line(d.End()),
				Signature: oneLine(ix.text(src, d.Pos(), sigEnd)),
				Test:      isTestFile && d.Recv == nil && isTestName(d.Name.Name),
			})
			if d.Recv != nil {
				ix.walk(id, d.Recv)
			}
			ix.walk(id, d.Type)
			if d.Body != nil {
				ix.walk(id, d.Body)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				doc, start, end := d.Doc, d.Pos(), d.End()
				if d.Lparen.IsValid() {
					start, end = spec.Pos(), spec.End()
					doc = nil
				}
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Doc != nil {
						doc = s.Doc
					}
					ix.typeSpec(s, rel, src, ix.line(docOr(doc, start)), ix.line(end))
				case *ast.ValueSpec:
					if s.Doc != nil {
						doc = s.Doc
					}
					kind := KindVar
					if d.Tok == token.CONST {
						kind = KindConst
					}
					for _, n := range s.Names {
						obj := info.Defs[n]
						if obj == nil || n.Name == "_" || obj.Parent() != ix.pkg.Types.Scope() {
							continue
						}
						id := ix.pkg.PkgPath + "." + n.Name
						ix.symbol(Symbol{
							ID: id, Name: n.Name, Kind: kind, Pkg: ix.pkg.PkgPath, File: rel,
							Line: ix.line(docOr(doc, start)), EndLine: ix.line(end),
							Signature: oneLine(d.Tok.String() + " " + ix.text(src, s.Pos(), s.End())),
						})
						if s.Type != nil {
							ix.walk(id, s.Type)
						}
						for _, v := range s.Values {
							ix.walk(id, v)
						}
					}
				}
			}
		}
	}
}

func (ix *goIndexer) typeSpec(s *ast.TypeSpec, rel string, src []byte, line, end int) {
	info := ix.pkg.TypesInfo
	tn, ok := info.Defs[s.Name].(*types.TypeName)
	if !ok || tn.Parent() != ix.pkg.Types.Scope() {
		return
	}
	id := ix.pkg.PkgPath + "." + s.Name.Name
	kind := KindType
	iface, isIface := tn.Type().Underlying().(*types.Interface)
	if isIface {
		kind = KindInterface
	}
	ix.symbol(Symbol{
		ID: id, Name: s.Name.Name, Kind: kind, Pkg: ix.pkg.PkgPath, File: rel,
		Line: line, EndLine: end, Signature: "type " + oneLine(ix.text(src, s.Pos(), s.End())),
	})
	switch t := s.Type.(type) {
	case *ast.StructType:
		for _, fld := range t.Fields.List {
			if len(fld.Names) == 0 {
				if to := ix.typeExprID(fld.Type); to != "" {
					ix.edge(EdgeEmbeds, id, to)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				if to := ix.typeExprID(m.Type); to != "" {
					ix.edge(EdgeEmbeds, id, to)
				}
				continue
			}
			for _, n := range m.Names {
				fn, ok := info.Defs[n].(*types.Func)
				if !ok {
					continue
				}
				ix.symbol(Symbol{
					ID: id + "." + n.Name, Name: n.Name, Kind: KindMethod, Pkg: ix.pkg.PkgPath, File: rel,
					Line: ix.line(docOr(m.Doc, m.Pos())), EndLine: ix.line(m.End()),
					Signature: oneLine(ix.text(src, m.Pos(), m.End())),
				})
				_ = fn
			}
		}
	}
	ix.walk(id, s.Type)
	qual := func(p *types.Package) string { return p.Path() }
	ms := MethodSet{}
	if isIface {
		for m := range iface.Methods() {
			if mid := funcID(m); mid != "" {
				ms[m.Name()+" "+types.TypeString(m.Type(), qual)] = mid
			}
		}
		if len(ms) > 0 {
			if ix.unit.Interfaces == nil {
				ix.unit.Interfaces = map[string]MethodSet{}
			}
			ix.unit.Interfaces[id] = ms
		}
		return
	}
	mset := types.NewMethodSet(types.NewPointer(tn.Type()))
	for sel := range mset.Methods() {
		m, ok := sel.Obj().(*types.Func)
		if !ok {
			continue
		}
		if mid := funcID(m); mid != "" {
			ms[m.Name()+" "+types.TypeString(m.Type(), qual)] = mid
		}
	}
	if len(ms) > 0 {
		if ix.unit.Types == nil {
			ix.unit.Types = map[string]MethodSet{}
		}
		ix.unit.Types[id] = ms
	}
}

// typeExprID names the repository type an embedded field or interface
// refers to, or "".
func (ix *goIndexer) typeExprID(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return ix.typeExprID(t.X)
	case *ast.IndexExpr:
		return ix.typeExprID(t.X)
	case *ast.IndexListExpr:
		return ix.typeExprID(t.X)
	case *ast.SelectorExpr:
		return ix.typeExprID(t.Sel)
	case *ast.Ident:
		if tn, ok := ix.pkg.TypesInfo.Uses[t].(*types.TypeName); ok && tn.Pkg() != nil && ix.inModule(tn.Pkg().Path()) {
			return tn.Pkg().Path() + "." + tn.Name()
		}
	}
	return ""
}

// walk records an edge from id to every repository symbol n names: a call
// when the name is what a call expression calls, a reference otherwise.
func (ix *goIndexer) walk(id string, n ast.Node) {
	info := ix.pkg.TypesInfo
	called := map[*ast.Ident]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if id := calleeIdent(n.Fun); id != nil {
				called[id] = true
			}
		case *ast.Ident:
			obj := info.Uses[n]
			if obj == nil || obj.Pkg() == nil || !ix.inModule(obj.Pkg().Path()) {
				return true
			}
			to := objectID(obj)
			if to == "" || to == id {
				return true
			}
			kind := EdgeRefs
			if called[n] {
				kind = EdgeCalls
			}
			ix.edge(kind, id, to)
		}
		return true
	})
}

func calleeIdent(e ast.Expr) *ast.Ident {
	switch f := ast.Unparen(e).(type) {
	case *ast.Ident:
		return f
	case *ast.SelectorExpr:
		return f.Sel
	case *ast.IndexExpr:
		return calleeIdent(f.X)
	case *ast.IndexListExpr:
		return calleeIdent(f.X)
	}
	return nil
}

func (ix *goIndexer) edge(kind EdgeKind, from, to string) {
	e := Edge{Kind: kind, From: from, To: to}
	if !ix.seen[e] {
		ix.seen[e] = true
		ix.unit.Edges = append(ix.unit.Edges, e)
	}
}

func (ix *goIndexer) symbol(s Symbol) { ix.unit.Symbols = append(ix.unit.Symbols, s) }

func (ix *goIndexer) line(p token.Pos) int { return ix.pkg.Fset.Position(p).Line }

func (ix *goIndexer) text(src []byte, from, to token.Pos) string {
	tf := ix.pkg.Fset.File(from)
	if tf == nil || src == nil {
		return ""
	}
	a, b := tf.Offset(from), tf.Offset(to)
	if a < 0 || b > len(src) || a > b {
		return ""
	}
	return string(bytes.TrimSpace(src[a:b]))
}

func docOr(doc *ast.CommentGroup, p token.Pos) token.Pos {
	if doc != nil {
		return doc.Pos()
	}
	return p
}

// oneLine keeps a declaration's header short: the first line, with " …"
// when more followed.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// objectID is the symbol ID of a package-level object or method, "" for
// locals, fields and anything else the graph does not hold.
func objectID(obj types.Object) string {
	switch o := obj.(type) {
	case *types.Func:
		return funcID(o)
	case *types.TypeName, *types.Const:
		if o.Parent() == o.Pkg().Scope() {
			return o.Pkg().Path() + "." + o.Name()
		}
	case *types.Var:
		if !o.IsField() && o.Parent() == o.Pkg().Scope() {
			return o.Pkg().Path() + "." + o.Name()
		}
	}
	return ""
}

// funcID is "pkg.Name" for a function and "pkg.Recv.Name" for a method,
// with generic instantiations mapped to their origin.
func funcID(fn *types.Func) string {
	fn = fn.Origin()
	if fn.Pkg() == nil {
		return ""
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return ""
	}
	recv := sig.Recv()
	if recv == nil {
		if fn.Parent() != fn.Pkg().Scope() {
			return ""
		}
		return fn.Pkg().Path() + "." + fn.Name()
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		return t.Origin().Obj().Pkg().Path() + "." + t.Origin().Obj().Name() + "." + fn.Name()
	}
	return ""
}

// isTestName reports whether a function name is a go test entry point.
func isTestName(name string) bool {
	for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest := name[len(prefix):]
		if rest == "" || prefix == "Example" {
			return true
		}
		r, _ := utf8.DecodeRuneInString(rest)
		return !unicode.IsLower(r)
	}
	return false
}

// packagePath is the import path of a repository directory.
func packagePath(module, dir string) string {
	if dir == "." || dir == "" {
		return module
	}
	return path.Join(module, dir)
}
