package codegraph

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// pyindexSource is the Python indexer, run as `python3 -I -S -c <source>`.
//
//go:embed pyindex.py
var pyindexSource string

// Bounds of a Python index: files beyond them are left out, and the graph
// says so in Stats.Refused.
const (
	pyMaxFiles     = 3000
	pyMaxFileBytes = 1 << 20
	pyMaxTotal     = 64 << 20
	pyTimeout      = 60 * time.Second
)

// ErrNoPython is returned by IndexPython when no Python 3 interpreter is
// installed.
var ErrNoPython = errors.New("no python3 interpreter found (install python3)")

// PythonInterpreters are tried in order. The worktree's own .venv is never
// one of them: it is the agent's to write, and the indexer only needs a
// parser, which any Python 3 has.
var PythonInterpreters = []string{"/usr/bin/python3", "/usr/local/bin/python3"}

func findPython() (string, error) {
	for _, p := range PythonInterpreters {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", ErrNoPython
}

// pyFile is the indexer's answer for one file.
type pyFile struct {
	Path    string `json:"path"`
	Error   string `json:"error"`
	Imports []struct {
		Module string `json:"module"`
		Name   string `json:"name"`
		As     string `json:"as"`
	} `json:"imports"`
	Defs []pyDef `json:"defs"`
}

type pyDef struct {
	Name  string     `json:"name"`
	Class string     `json:"class"`
	Kind  string     `json:"kind"` // func, method, class
	Line  int        `json:"line"`
	End   int        `json:"end"`
	Sig   string     `json:"sig"`
	Calls [][]string `json:"calls"` // [kind, name(, base)]: kind is name, self or attr
	Refs  []string   `json:"refs"`
	Bases []string   `json:"bases"`
}

// IndexPython indexes the Python files of repo with Python's own ast (a
// system interpreter, isolated: -I -S, an empty environment, run outside
// the repository, sources on stdin) into the same graph Go code gets:
// functions, methods and classes as symbols; calls resolved by name
// (same module first, then imports, then a unique-enough name across the
// repository) as call edges; test functions marked.
func IndexPython(ctx context.Context, repo string) (*Graph, Stats, error) {
	start := time.Now()
	var st Stats
	python, err := findPython()
	if err != nil {
		return nil, st, err
	}
	conf, err := sandbox.OpenConfined(repo)
	if err != nil {
		return nil, st, err
	}
	defer conf.Close()
	type src struct {
		Path   string `json:"path"`
		Source string `json:"source"`
	}
	var files []src
	total := 0
	root := conf.Dir()
	err = conf.WalkDir(".", func(slash string, d fs.DirEntry, err error) error {
		p := filepath.Join(root, filepath.FromSlash(slash))
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		rel, _ := relPath(root, p)
		if d.IsDir() {
			n := d.Name()
			if p != root && (strings.HasPrefix(n, ".") || n == "__pycache__" || n == "node_modules" || n == "site-packages" || n == "venv" || n == "build" || n == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".py") {
			return nil
		}
		if !d.Type().IsRegular() || len(files) >= pyMaxFiles || total >= pyMaxTotal {
			st.Refused = append(st.Refused, rel)
			return nil
		}
		data, err := conf.ReadFile(rel, pyMaxFileBytes+1)
		if err != nil || len(data) > pyMaxFileBytes {
			st.Refused = append(st.Refused, rel)
			return nil
		}
		total += len(data)
		files = append(files, src{rel, strings.ToValidUTF8(string(data), "\uFFFD")})
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	st.Scan = time.Since(start)
	req, err := json.Marshal(struct {
		Files []src `json:"files"`
	}{files})
	if err != nil {
		return nil, st, err
	}
	// The interpreter's deadline stretches with the machine's load, as
	// the Go index's does (sandbox.Load): at rest pyTimeout.
	ctx, cancel := context.WithTimeout(ctx, sandbox.ReadLoad().Deadline(pyTimeout, 0))
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", pyindexSource)
	cmd.Dir = os.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	cmd.Stdin = bytes.NewReader(req)
	scratch.Own(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, st, fmt.Errorf("python indexer: %w", ctx.Err())
		}
		// Not stderr: it can quote the agent's code.
		return nil, st, fmt.Errorf("python indexer (%s) failed: %w", python, err)
	}
	var out struct {
		Files []pyFile `json:"files"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, st, fmt.Errorf("python indexer: reading its answer: %w", err)
	}
	g := assemblePython(out.Files)
	for _, f := range out.Files {
		if f.Error != "" {
			st.Errors = append(st.Errors, f.Path+": "+f.Error)
		}
	}
	st.Units = len(out.Files)
	st.Load = time.Since(start) - st.Scan
	st.Total = time.Since(start)
	slices.Sort(st.Refused)
	return g, st, nil
}

// pyModule is a file's dotted module name: "pkg/sub/mod.py" → "pkg.sub.mod",
// "pkg/__init__.py" → "pkg".
func pyModule(rel string) string {
	m := strings.TrimSuffix(rel, ".py")
	m = strings.TrimSuffix(m, "/__init__")
	return strings.ReplaceAll(m, "/", ".")
}

// isPythonTestFile follows pytest's default discovery.
func isPythonTestFile(rel string) bool {
	base := path.Base(rel)
	return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || strings.Contains("/"+rel, "/tests/") || strings.Contains("/"+rel, "/test/")
}

// maxAmbiguity is how many same-named definitions a call may resolve to
// when nothing narrower (module, class, import) decides: beyond it the name
// is too common to mean anything.
const maxAmbiguity = 3

// assemblePython builds the graph of the indexer's files: every
// definition as a symbol first, then the edges its calls, references and
// bases resolve to, then dispatch edges from base classes' methods to
// their overrides.
func assemblePython(files []pyFile) *Graph {
	g := &pyAssembly{
		u:        &Unit{Dir: "."},
		byName:   map[string][]string{},
		methods:  map[string][]string{},
		inModule: map[string]string{},
		inClass:  map[string]string{},
		classOf:  map[string]string{},
		moduleOf: map[string]string{},
		initOf:   map[string]string{},
		defined:  map[string]bool{},
	}
	for fi := range files {
		f := &files[fi]
		if f.Error != "" {
			continue
		}
		mod := pyModule(f.Path)
		g.u.Pkgs = append(g.u.Pkgs, mod)
		for _, d := range f.Defs {
			g.addDef(f, mod, d)
		}
	}
	for _, p := range g.all {
		g.linkDef(p)
	}
	for _, p := range g.all {
		if p.def.Kind == "class" {
			g.linkOverrides(p)
		}
	}
	return Assemble("", []*Unit{g.u})
}

// pyAssembly is the Python graph being assembled: the unit, and the
// lookups that resolve a name used in a definition to the definitions it
// may mean.
type pyAssembly struct {
	u        *Unit
	byName   map[string][]string // def name → IDs (functions and classes)
	methods  map[string][]string // method name → IDs
	inModule map[string]string   // module + "\x00" + name → top-level ID
	inClass  map[string]string   // module.Class + "\x00" + method → ID
	classOf  map[string]string   // method ID → class ID
	moduleOf map[string]string   // ID → module
	initOf   map[string]string   // class ID → its __init__ ID
	defined  map[string]bool
	all      []pyDefined // in the files' order
}

// pyDefined is a definition taken into the graph, for linking once all
// are known.
type pyDefined struct {
	id   string
	mod  string
	def  pyDef
	file *pyFile
}

// addDef takes in definition d of module mod as a symbol, and records it
// in the lookups; a redefinition of an ID is left out (the first wins).
func (g *pyAssembly) addDef(f *pyFile, mod string, d pyDef) {
	id := mod + "." + d.Name
	kind := KindFunc
	switch d.Kind {
	case "class":
		kind = KindType
	case "method":
		id = mod + "." + d.Class + "." + d.Name
		kind = KindMethod
	}
	if g.defined[id] {
		return // a redefinition: the first wins
	}
	g.defined[id] = true
	test := isPythonTestFile(f.Path) && strings.HasPrefix(d.Name, "test") && kind != KindType
	g.u.Symbols = append(g.u.Symbols, Symbol{ID: id, Name: d.Name, Kind: kind, Pkg: mod, File: f.Path, Line: d.Line, EndLine: max(d.End, d.Line), Signature: d.Sig, Test: test})
	g.moduleOf[id] = mod
	switch kind {
	case KindMethod:
		g.methods[d.Name] = append(g.methods[d.Name], id)
		cls := mod + "." + d.Class
		g.inClass[cls+"\x00"+d.Name] = id
		g.classOf[id] = cls
		if d.Name == "__init__" {
			g.initOf[cls] = id
		}
	default:
		g.byName[d.Name] = append(g.byName[d.Name], id)
		g.inModule[mod+"\x00"+d.Name] = id
	}
	g.all = append(g.all, pyDefined{id, mod, d, f})
}

// resolveImport resolves alias, a name module mod of file f imported
// (from module import name as alias), to the definitions it may mean.
func (g *pyAssembly) resolveImport(f *pyFile, mod, alias string) []string {
	for _, im := range f.Imports {
		if im.As != alias || im.Name == "" {
			continue
		}
		target := im.Module
		if strings.HasPrefix(target, ".") {
			target = relativeImport(f.Path, mod, target)
		}
		var out []string
		for _, id := range g.byName[im.Name] {
			if m := g.moduleOf[id]; m == target || strings.HasSuffix(m, "."+target) || strings.HasPrefix(m, target+".") {
				out = append(out, id)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// relativeImport is the module a relative import (target, "..pkg.mod") in
// module mod, file rel, names: the package mod is in (mod itself for an
// __init__.py), one package level up per dot past the first.
func relativeImport(rel, mod, target string) string {
	base := mod
	if !strings.HasSuffix(rel, "__init__.py") {
		base = parentModule(base)
	}
	dots := len(target) - len(strings.TrimLeft(target, "."))
	for range dots - 1 {
		base = parentModule(base)
	}
	rest := strings.TrimLeft(target, ".")
	return strings.Trim(base+"."+rest, ".")
}

// parentModule is the package a dotted module is in ("" at the top).
func parentModule(m string) string {
	if i := strings.LastIndexByte(m, '.'); i >= 0 {
		return m[:i]
	}
	return ""
}

// unlessAmbiguous is ids, or none when there are too many to mean
// anything (maxAmbiguity).
func unlessAmbiguous(ids []string) []string {
	if len(ids) > maxAmbiguity {
		return nil
	}
	return ids
}

// resolveName is the one definition a name used in p means: p's module's
// own, else the one import it names.
func (g *pyAssembly) resolveName(p pyDefined, name string) string {
	if id := g.inModule[p.mod+"\x00"+name]; id != "" {
		return id
	}
	if ids := g.resolveImport(p.file, p.mod, name); len(ids) == 1 {
		return ids[0]
	}
	return ""
}

// linkDef adds p's edges: the definitions its calls may reach, those it
// refers to, and (for a class) its bases; each target once.
func (g *pyAssembly) linkDef(p pyDefined) {
	seen := map[string]bool{}
	add := func(kind EdgeKind, to string) {
		if to == "" || to == p.id || seen[to] {
			return
		}
		seen[to] = true
		g.u.Edges = append(g.u.Edges, Edge{Kind: kind, From: p.id, To: to})
		// Calling a class runs its __init__.
		if init := g.initOf[to]; init != "" && kind == EdgeCalls && !seen[init] {
			seen[init] = true
			g.u.Edges = append(g.u.Edges, Edge{Kind: EdgeCalls, From: p.id, To: init})
		}
	}
	for _, c := range p.def.Calls {
		if len(c) < 2 {
			continue
		}
		for _, t := range g.callTargets(p, c) {
			add(EdgeCalls, t)
		}
	}
	for _, r := range p.def.Refs {
		if m, ok := strings.CutPrefix(r, "self."); ok {
			if id := g.inClass[g.classOf[p.id]+"\x00"+m]; id != "" {
				add(EdgeRefs, id)
			}
			continue
		}
		if id := g.resolveName(p, r); id != "" {
			add(EdgeRefs, id)
		}
	}
	// A class refers to its bases.
	for _, b := range p.def.Bases {
		if id := g.resolveName(p, b); id != "" {
			add(EdgeEmbeds, id)
		}
	}
}

// callTargets resolves a call in p, c = [kind, name(, base)], to the
// definitions it may reach: by the narrowest scope that knows the name
// (module, class, import), else by the name across the repository unless
// too ambiguous.
func (g *pyAssembly) callTargets(p pyDefined, c []string) []string {
	name := c[1]
	switch c[0] {
	case "name":
		if id := g.inModule[p.mod+"\x00"+name]; id != "" {
			return []string{id}
		}
		if ids := g.resolveImport(p.file, p.mod, name); ids != nil {
			return ids
		}
		return unlessAmbiguous(g.byName[name])
	case "self":
		if id := g.inClass[g.classOf[p.id]+"\x00"+name]; id != "" {
			return []string{id}
		}
		return unlessAmbiguous(g.methods[name])
	case "attr":
		// module.func() through an import, else a method by name.
		if len(c) > 2 && c[2] != "" {
			if ids := moduleFuncs(p.file, c[2], name, g.byName, g.moduleOf); ids != nil {
				return ids
			}
		}
		return unlessAmbiguous(append(slices.Clone(g.methods[name]), g.byName[name]...))
	}
	return nil
}

// linkOverrides adds a dispatch edge from each method of class p's bases
// to the method of p that overrides it: the override may run where the
// base class's method is called.
func (g *pyAssembly) linkOverrides(p pyDefined) {
	for _, b := range p.def.Bases {
		baseID := g.resolveName(p, b)
		if baseID == "" {
			continue
		}
		for key, mid := range g.inClass {
			cls, name, _ := strings.Cut(key, "\x00")
			if cls != p.id {
				continue
			}
			if bm := g.inClass[baseID+"\x00"+name]; bm != "" {
				g.u.Edges = append(g.u.Edges, Edge{Kind: EdgeDispatch, From: bm, To: mid})
			}
		}
	}
}

// moduleFuncs resolves base.name() where base is an imported module.
func moduleFuncs(f *pyFile, base, name string, byName map[string][]string, moduleOf map[string]string) []string {
	for _, im := range f.Imports {
		if im.As != base {
			continue
		}
		target := strings.TrimLeft(im.Module, ".")
		if im.Name != "" {
			target = strings.Trim(target+"."+im.Name, ".")
		}
		var out []string
		for _, id := range byName[name] {
			if m := moduleOf[id]; m == target || strings.HasSuffix(m, "."+target) {
				out = append(out, id)
			}
		}
		return out
	}
	return nil
}
