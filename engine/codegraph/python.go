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
	ctx, cancel := context.WithTimeout(ctx, pyTimeout)
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

func assemblePython(files []pyFile) *Graph {
	u := &Unit{Dir: "."}
	byName := map[string][]string{}  // def name → IDs (functions and classes)
	methods := map[string][]string{} // method name → IDs
	inModule := map[string]string{}  // module + "\x00" + name → top-level ID
	inClass := map[string]string{}   // module.Class + "\x00" + method → ID
	classOf := map[string]string{}   // method ID → class ID
	moduleOf := map[string]string{}  // ID → module
	initOf := map[string]string{}    // class ID → its __init__ ID
	defined := map[string]bool{}
	type pending struct {
		id    string
		mod   string
		class string
		def   pyDef
		file  *pyFile
	}
	var all []pending
	for fi := range files {
		f := &files[fi]
		if f.Error != "" {
			continue
		}
		mod := pyModule(f.Path)
		u.Pkgs = append(u.Pkgs, mod)
		for _, d := range f.Defs {
			id := mod + "." + d.Name
			kind := KindFunc
			switch d.Kind {
			case "class":
				kind = KindType
			case "method":
				id = mod + "." + d.Class + "." + d.Name
				kind = KindMethod
			}
			if defined[id] {
				continue // a redefinition: the first wins
			}
			defined[id] = true
			test := isPythonTestFile(f.Path) && strings.HasPrefix(d.Name, "test") && kind != KindType
			u.Symbols = append(u.Symbols, Symbol{ID: id, Name: d.Name, Kind: kind, Pkg: mod, File: f.Path, Line: d.Line, EndLine: max(d.End, d.Line), Signature: d.Sig, Test: test})
			moduleOf[id] = mod
			switch kind {
			case KindMethod:
				methods[d.Name] = append(methods[d.Name], id)
				cls := mod + "." + d.Class
				inClass[cls+"\x00"+d.Name] = id
				classOf[id] = cls
				if d.Name == "__init__" {
					initOf[cls] = id
				}
			default:
				byName[d.Name] = append(byName[d.Name], id)
				inModule[mod+"\x00"+d.Name] = id
			}
			all = append(all, pending{id, mod, d.Class, d, f})
		}
	}
	// imports of a module: local alias → (module, name)
	resolveImport := func(f *pyFile, mod, alias string) []string {
		for _, im := range f.Imports {
			if im.As != alias || im.Name == "" {
				continue
			}
			target := im.Module
			if strings.HasPrefix(target, ".") {
				// Relative: strip one package level per dot past the first.
				base := mod
				if !strings.HasSuffix(f.Path, "__init__.py") {
					if i := strings.LastIndexByte(base, '.'); i >= 0 {
						base = base[:i]
					} else {
						base = ""
					}
				}
				dots := len(target) - len(strings.TrimLeft(target, "."))
				for range dots - 1 {
					if i := strings.LastIndexByte(base, '.'); i >= 0 {
						base = base[:i]
					} else {
						base = ""
					}
				}
				rest := strings.TrimLeft(target, ".")
				target = strings.Trim(base+"."+rest, ".")
			}
			var out []string
			for _, id := range byName[im.Name] {
				if m := moduleOf[id]; m == target || strings.HasSuffix(m, "."+target) || strings.HasPrefix(m, target+".") {
					out = append(out, id)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
		return nil
	}
	unique := func(ids []string) []string {
		if len(ids) > maxAmbiguity {
			return nil
		}
		return ids
	}
	for _, p := range all {
		seen := map[string]bool{}
		add := func(kind EdgeKind, to string) {
			if to == "" || to == p.id || seen[to] {
				return
			}
			seen[to] = true
			u.Edges = append(u.Edges, Edge{Kind: kind, From: p.id, To: to})
			// Calling a class runs its __init__.
			if init := initOf[to]; init != "" && kind == EdgeCalls && !seen[init] {
				seen[init] = true
				u.Edges = append(u.Edges, Edge{Kind: EdgeCalls, From: p.id, To: init})
			}
		}
		for _, c := range p.def.Calls {
			if len(c) < 2 {
				continue
			}
			name := c[1]
			var targets []string
			switch c[0] {
			case "name":
				if id := inModule[p.mod+"\x00"+name]; id != "" {
					targets = []string{id}
				} else if ids := resolveImport(p.file, p.mod, name); ids != nil {
					targets = ids
				} else {
					targets = unique(byName[name])
				}
			case "self":
				cls := classOf[p.id]
				if id := inClass[cls+"\x00"+name]; id != "" {
					targets = []string{id}
				} else {
					targets = unique(methods[name])
				}
			case "attr":
				// module.func() through an import, else a method by name.
				if len(c) > 2 && c[2] != "" {
					if ids := moduleFuncs(p.file, c[2], name, byName, moduleOf); ids != nil {
						targets = ids
						break
					}
				}
				targets = unique(append(slices.Clone(methods[name]), byName[name]...))
			}
			for _, t := range targets {
				add(EdgeCalls, t)
			}
		}
		for _, r := range p.def.Refs {
			if m, ok := strings.CutPrefix(r, "self."); ok {
				if id := inClass[classOf[p.id]+"\x00"+m]; id != "" {
					add(EdgeRefs, id)
				}
				continue
			}
			if id := inModule[p.mod+"\x00"+r]; id != "" {
				add(EdgeRefs, id)
			} else if ids := resolveImport(p.file, p.mod, r); len(ids) == 1 {
				add(EdgeRefs, ids[0])
			}
		}
		// A class refers to its bases.
		for _, b := range p.def.Bases {
			if id := inModule[p.mod+"\x00"+b]; id != "" {
				add(EdgeEmbeds, id)
			} else if ids := resolveImport(p.file, p.mod, b); len(ids) == 1 {
				add(EdgeEmbeds, ids[0])
			}
		}
	}
	// An overriding method may run where its base class's is called: a
	// dispatch edge from the base method to the override.
	for _, p := range all {
		if p.def.Kind != "class" {
			continue
		}
		for _, b := range p.def.Bases {
			baseID := inModule[p.mod+"\x00"+b]
			if baseID == "" {
				if ids := resolveImport(p.file, p.mod, b); len(ids) == 1 {
					baseID = ids[0]
				}
			}
			if baseID == "" {
				continue
			}
			for key, mid := range inClass {
				cls, name, _ := strings.Cut(key, "\x00")
				if cls != p.id {
					continue
				}
				if bm := inClass[baseID+"\x00"+name]; bm != "" {
					u.Edges = append(u.Edges, Edge{Kind: EdgeDispatch, From: bm, To: mid})
				}
			}
		}
	}
	return Assemble("", []*Unit{u})
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
