package golang

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// listed is the part of `go list -json` the engine reads.
type listed struct {
	ImportPath   string
	Name         string
	Dir          string
	GoFiles      []string
	CgoFiles     []string
	Imports      []string
	TestGoFiles  []string
	XTestGoFiles []string
	TestImports  []string
	XTestImports []string
	Export       string
	Standard     bool
	DepOnly      bool
	Deps         []string
	ImportMap    map[string]string
	Module       *struct {
		Path string
		Dir  string
		Main bool
	}
	Error *struct{ Err string }
}

// pkg is one package the change touches.
type pkg struct {
	list    listed
	modRoot string // absolute
	relDir  string // repository-relative directory ("." for the root)
	fset    *token.FileSet
	types   *types.Package
	info    *types.Info
	files   []*srcFile
	// ranges are the lines to mutate per file (repository-relative path).
	ranges map[string][]verify.LineRange
	// reach: the change's tests of this package, for --reach.
	reach   []string
	mutants []*mutant
	base    *baseline
	// pending is a baseline built but not yet run.
	pending *pendingBaseline
	// assigned: the mutants have their covering tests and the schema was
	// built (schemaOf).
	assigned bool
	// deps are the listed packages of the module (for the cache key).
	all map[string]listed
	// schemaBin is the compiled schema test binary, if any.
	schemaBin string
	// schemaSegs are the rewritten ranges of each schema file (base name).
	schemaSegs map[string][]segment
	// ordered: schemaBin has the generated TestMain, so a mutant run can
	// give the order of its tests (orderEnv).
	ordered bool
	// mainFailed: the generated TestMain did not build in this package.
	mainFailed bool
	// schemaTried: the schema was already built (with the baseline's
	// coverage binary), successfully or not.
	schemaTried bool
	// key is the baseline's cache key, once computed.
	key string
	num int
}

func (p *pkg) hasTests() bool { return len(p.list.TestGoFiles)+len(p.list.XTestGoFiles) > 0 }

const listFields = "ImportPath,Name,Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports,Export,Standard,DepOnly,Deps,ImportMap,Module,Error"

// goList runs `go list` with args in mod and decodes its packages.
func (s *session) goList(mod string, args []string) ([]listed, error) {
	res, err := s.goCmd(mod, args...)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 && len(res.Stdout) == 0 {
		return nil, fmt.Errorf("go list in %s: %s", s.rel(mod), firstLines(string(res.Stderr), 5))
	}
	var out []listed
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	for {
		var l listed
		if err := dec.Decode(&l); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list in %s: reading its output: %w", s.rel(mod), err)
		}
		out = append(out, l)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// goCmd runs the go command in dir through the runner and turns a missing
// toolchain into ErrNoGo.
func (s *session) goCmd(dir string, args ...string) (sandbox.Result, error) {
	res, err := s.runner.Run(s.ctx, sandbox.Command{Dir: dir, Args: append([]string{"go"}, args...), Timeout: s.opts.CompileTimeout})
	if errors.Is(err, sandbox.ErrNotFound) {
		return res, ErrNoGo
	}
	if err == nil && res.TimedOut {
		return res, fmt.Errorf("go %s: timed out after %s (compile budget)", strings.Join(args, " "), s.opts.CompileTimeout)
	}
	return res, err
}

// TestBuildFlags are the flags of every test binary the engine builds
// (after `go test -c`): the mutant runs never read DWARF or the symbol
// table, so the link leaves them out (-s -w), which makes the link, the
// largest part of the build after a save, shorter. -trimpath is not used:
// tests that find their files through runtime.Caller need real paths. A
// goflags (the GOFLAGS the go command will see) that sets -ldflags keeps
// its own (a flag on the command line would replace it, and the tests may
// depend on it).
func TestBuildFlags(goflags string) []string {
	if strings.Contains(goflags, "-ldflags") {
		return []string{"-vet=off"}
	}
	return []string{"-vet=off", "-ldflags=-s -w"}
}

// buildFlags are TestBuildFlags for the runner's own GOFLAGS (`go env` in
// the runner, not bcode's environment: the Docker runner does not pass the
// user's on).
func (s *session) buildFlags() []string { return TestBuildFlags(s.goEnv("GOFLAGS")) }

// testBuild builds the test binary of the package in dir as out, with
// TestBuildFlags and extra flags before the package.
func (s *session) testBuild(dir, out string, extra ...string) (sandbox.Result, error) {
	args := append([]string{"test", "-c"}, s.buildFlags()...)
	args = append(append(args, extra...), "-o", out, ".")
	return s.goCmd(dir, args...)
}

// lists runs the two `go list` calls of mod's target directories, or
// takes them from the cache. First the packages themselves, without export
// data: they are type-checked from source and their test build compiles
// them anyway, so compiling them here would be paid twice after a save.
// Then export data for what they import.
func (s *session) lists(mod string, rels []string) (targets, deps []listed, err error) {
	<-s.envDone
	cache := s.envErr == nil
	tkey := ""
	if cache {
		tkey = s.targetsKey(mod, rels)
		targets, _ = s.cachedList(mod, tkey)
	}
	listedTargets := targets == nil
	if listedTargets {
		if targets, err = s.goList(mod, append([]string{"list", "-e", "-json=" + listFields}, rels...)); err != nil {
			return nil, nil, err
		}
	} else {
		s.rep.Stats.ListCached++
	}
	// The targets' list is kept once their dependencies' directories are
	// known: its Deps follow their imports.
	defer func() {
		if err == nil && cache && listedTargets {
			s.storeList(mod, tkey, targets, deps, true)
		}
	}()
	imports := map[string]bool{}
	for _, t := range targets {
		for _, i := range t.Imports {
			if i != "C" && i != "unsafe" {
				imports[i] = true
			}
		}
	}
	if len(imports) == 0 {
		return targets, nil, nil
	}
	dkey := ""
	if cache {
		dkey = s.depsKey(mod, sortedKeys(imports))
		if deps, ok := s.cachedList(mod, dkey); ok {
			s.rep.Stats.ListCached++
			return targets, deps, nil
		}
	}
	args := []string{"list", "-e", "-export", "-deps", "-json=" + listFields}
	if deps, err = s.goList(mod, append(args, sortedKeys(imports)...)); err != nil {
		return nil, nil, err
	}
	if cache && exportsComplete(deps) {
		s.storeList(mod, dkey, deps, deps, false)
	}
	return targets, deps, nil
}

// exportsComplete: an export list is kept only when every package in it
// has export data.
func exportsComplete(deps []listed) bool {
	for _, l := range deps {
		if l.Export == "" && l.ImportPath != "unsafe" && l.ImportPath != "C" {
			return false
		}
	}
	return true
}

// moduleRoot finds the directory of the go.mod that owns dir (absolute),
// without leaving the snapshot.
func (s *session) moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if existsBeneath(s.root, filepath.Join(d, "go.mod")) {
			return d, nil
		}
		if d == s.root || !strings.HasPrefix(d, s.root) {
			return "", fmt.Errorf("no go.mod above %s", s.rel(dir))
		}
	}
}

func (s *session) rel(abs string) string {
	r, err := filepath.Rel(s.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

// load lists, parses and type-checks the packages in dirs (absolute),
// grouped by module. Packages that cannot be loaded become report errors.
func (s *session) load(dirs []string) ([]*pkg, error) {
	byMod := map[string][]string{}
	for _, d := range dirs {
		root, err := s.moduleRoot(d)
		if err != nil {
			s.rep.Errors = append(s.rep.Errors, err.Error())
			continue
		}
		byMod[root] = append(byMod[root], d)
	}
	mods := make([]string, 0, len(byMod))
	for m := range byMod {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	var out []*pkg
	for _, mod := range mods {
		s.p.Step("loading packages of %s", s.rel(mod))
		// First the packages themselves, without export data: they are
		// type-checked from source and their test build compiles them
		// anyway, so compiling them here would be paid twice after a save.
		// Then export data for what they import.
		var rels []string
		for _, d := range byMod[mod] {
			r, _ := filepath.Rel(mod, d)
			rels = append(rels, "./"+filepath.ToSlash(r))
		}
		targets, deps, err := s.lists(mod, rels)
		if err != nil {
			return nil, err
		}
		all := map[string]listed{}
		for _, l := range deps {
			all[l.ImportPath] = l
		}
		for _, t := range targets {
			if _, ok := all[t.ImportPath]; !ok {
				all[t.ImportPath] = t
			}
		}
		imp := importer.ForCompiler(token.NewFileSet(), "gc", func(p string) (io.ReadCloser, error) {
			l, ok := all[p]
			if !ok || l.Export == "" {
				return nil, fmt.Errorf("no export data for %q", p)
			}
			// Export data the toolchain wrote in its cache, which a
			// container shares: read whole, capped, like any other.
			data, err := sandbox.ReadPath(l.Export, maxExportData)
			if err != nil {
				return nil, err
			}
			return io.NopCloser(bytes.NewReader(data)), nil
		})
		for _, t := range targets {
			p, err := s.typecheck(mod, t, all, imp)
			if err != nil {
				s.rep.Errors = append(s.rep.Errors, err.Error())
				continue
			}
			out = append(out, p)
		}
	}
	return out, nil
}

type mappedImporter struct {
	imp types.Importer
	m   map[string]string
}

func (m mappedImporter) Import(p string) (*types.Package, error) {
	if to, ok := m.m[p]; ok {
		p = to
	}
	return m.imp.Import(p)
}

func (s *session) typecheck(mod string, l listed, all map[string]listed, imp types.Importer) (*pkg, error) {
	rel := s.rel(l.Dir)
	if l.Error != nil && len(l.GoFiles) == 0 {
		return nil, fmt.Errorf("package %s: %s", rel, strings.TrimSpace(l.Error.Err))
	}
	if len(l.CgoFiles) > 0 {
		return nil, fmt.Errorf("package %s uses cgo: mutation evidence supports pure Go packages only", rel)
	}
	p := &pkg{list: l, modRoot: mod, relDir: rel, fset: token.NewFileSet(), ranges: map[string][]verify.LineRange{}, all: all}
	var asts []*ast.File
	for _, name := range l.GoFiles {
		abs := filepath.Join(l.Dir, name)
		src, err := mutate.ReadBeneath(s.root, abs, maxSourceFile)
		if err != nil {
			return nil, fmt.Errorf("package %s: %w", rel, err)
		}
		f, err := parser.ParseFile(p.fset, abs, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("package %s does not parse: %v", rel, err)
		}
		asts = append(asts, f)
		p.files = append(p.files, &srcFile{rel: path.Join(rel, name), abs: abs, name: name, src: src, ast: f})
	}
	if len(asts) == 0 {
		return nil, fmt.Errorf("package %s has no Go files to mutate", rel)
	}
	p.info = &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Defs:  map[*ast.Ident]types.Object{},
		Uses:  map[*ast.Ident]types.Object{},
		// Scopes let CheckExpr see the locals at a mutant's position.
		Scopes: map[ast.Node]*types.Scope{},
	}
	var errs []string
	conf := types.Config{
		Importer: mappedImporter{imp, l.ImportMap},
		Error: func(err error) {
			if len(errs) < 3 {
				errs = append(errs, err.Error())
			}
		},
	}
	tp, _ := conf.Check(l.ImportPath, p.fset, asts, p.info)
	if len(errs) > 0 {
		return nil, fmt.Errorf("package %s does not type-check, so its mutants cannot be judged: %s", rel, strings.Join(errs, "; "))
	}
	p.types = tp
	for _, f := range p.files {
		s.rep.Errors = append(s.rep.Errors, scanIgnores(p.fset, f)...)
	}
	return p, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
