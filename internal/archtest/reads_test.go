package archtest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The read boundary (docs/sandbox.md, "Boundary: reads"): in the packages
// that handle worktree, snapshot and scratch paths, nothing opens a file or
// lists a directory by path except through sandbox's confined reader. The
// rule is syntactic and exact: a production (non-test) file of such a
// package may not call any of readCalls, nor parser.ParseFile with a nil
// source (the parser then reads the file by its name). Whatever reaches an
// *os.Root or *os.File here came from one of these calls, so forbidding
// them forbids the methods too. Metadata calls (os.Stat, os.Lstat) read no
// content and cannot block on a fifo; writes (os.Create, os.WriteFile,
// os.MkdirAll) are the write boundary's business, not this one's.

// readScope is the packages that handle worktree, snapshot and scratch
// paths: the gate and its adapters, evidence, the context pack and code
// graph, landing, the task engine and runner, the agent backend and the
// LSP server. Patterns as in the architecture table.
var readScope = []string{
	"verify/...", "engine/check/...", "engine/pack/...", "engine/codegraph/...",
	"engine/task/...", "engine/runner/...", "engine/agentbackend/...", "engine/app/...",
	"server/...", "sandbox/...",
}

// readScopeExempt are packages of readScope the rule leaves out, each with
// why. Besides these, packages whose name ends in "test" (confinedtest,
// runnertest, dockertest...) are test support, run by tests only.
var readScopeExempt = map[string]string{
	"sandbox":              "the confined reader itself",
	"sandbox/docker/probe": "the escape probe, which runs inside the container and reports what it can read there",
	"sandbox/scratch":      "bcode's scratch bookkeeping (its own owner files, /proc); it may import nothing of bcode's",
}

// readCalls are the functions that open or list by path.
var readCalls = map[string][]string{
	"os":                       {"ReadFile", "Open", "OpenFile", "ReadDir", "DirFS", "OpenRoot", "OpenInRoot"},
	"io/ioutil":                {"ReadFile", "ReadDir"},
	"path/filepath":            {"Walk", "WalkDir"},
	"go/parser":                {"ParseDir"},
	"golang.org/x/tools/txtar": {"ParseFile"},
	"debug/buildinfo":          {"ReadFile"},
	"debug/elf":                {"Open"},
	"archive/zip":              {"OpenReader"},
}

// readExceptions are the functions allowed to open by path, each with why:
// files bcode itself owns, which neither the agent nor a test run writes.
// Keyed "package.Function" ("package.Type.Method" for methods).
var readExceptions = map[string]string{
	// An os.Root opened to write (never read) the overlay of a snapshot
	// bcode made, and to chmod its directories before removing them.
	"verify/gitchange.applyOverlay": "writes beneath an os.Root",
	"verify/gitchange.removeAll":    "chmods beneath an os.Root before removing bcode's own snapshot",
	// bcode-agent's log, a file bcode creates beside the worktree, opened
	// to append.
	"engine/agentbackend.agentLog": "opens bcode's own log file to append",
	// A lock file in bcode's own build-cache seed, opened to flock.
	"engine/agentbackend.lockSeed": "locks a file in bcode's own build-cache seed",
	// The bcode-agent binary bcode ships and starts in the container: its
	// build info and ELF header, before it runs.
	"engine/agentbackend.CheckAgentVersion": "reads bcode's own agent binary",
	"engine/agentbackend.checkAgentBinary":  "reads bcode's own agent binary",
	// The labelled corpus is bcode's own test data, read by the bench.
	"engine/check/labelled.Parse": "reads bcode's own labelled corpus",
	// The stand-in editor of the server's tests plays the user's editor,
	// which reads the files it opens.
	"server/fake.Editor.Open": "a test stand-in for the user's editor",
	// Writes and removals beneath an os.Root (no read of content): the
	// gitfile of a new worktree, reject's removal, git's export of a
	// commit; and the copy of the index bcode makes (its source is opened
	// through sandbox.OpenPath).
	"sandbox/git.writeGitfile": "writes beneath an os.Root",
	"sandbox/git.RemoveTree":   "removes beneath an os.Root",
	// The node_modules mount point in the agent's worktree: a link or a
	// file there removed beneath an os.Root, nothing read.
	"engine/agentbackend.mountPoint": "removes beneath an os.Root",
	"sandbox/git.Repo.export":        "writes beneath an os.Root",
	"sandbox/git.copyIndex":          "creates the destination of a copy",
	// The kernel's mount table and loop devices, and the disk image bcode
	// creates for a worktree; the mount point listed is the worktree's root
	// itself (bcode's path), emptied before the disk's files are copied in.
	// The kernel's account of a language server's CPU time, which decides
	// whether the server is stalled (the kernel writes it, not the agent).
	"engine/codegraph/lspclient.cpuTime": "reads /proc/PID/stat",
	"sandbox/docker.diskMountedAt":       "reads /sys (the loop device's backing file)",
	"sandbox/docker.disk.mount":          "creates bcode's own disk image",
	"sandbox/docker.stagedDir":           "reads the name bcode wrote into its own scratch directory when a path was too long for the staging point's name",
	"sandbox/docker.finishRelease":       "lists only the names at the top of the directory it empties (RemoveAll follows no link)",
	// The module cache bcode's own `go mod download` filled (sandbox/gotool
	// may import nothing of bcode's, so not even the reader).
	"sandbox/gotool.Toolchain.verify": "reads bcode's module cache",
	"sandbox/gotool.linkTree":         "walks bcode's module cache",
	"sandbox/gotool.linkFile":         "copies from bcode's module cache",
	// The copy of a test binary into or out of mutate's cache: the source
	// is opened through sandbox.OpenPath, the destination created here.
	"verify/mutate/golang.copyFile": "creates the destination of a copy",
}

type goFiles struct {
	ImportPath string
	Dir        string
	GoFiles    []string
}

func listFiles(t *testing.T) []goFiles {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []goFiles
	for {
		var p goFiles
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func inReadScope(p string) bool {
	if _, ok := readScopeExempt[p]; ok || strings.HasSuffix(p, "test") {
		return false
	}
	for _, pat := range readScope {
		if ok, _ := matches(pat, p); ok {
			return true
		}
	}
	return false
}

// readViolations lists the forbidden calls in one file's source, each as
// "file:line: func calls pkg.Name", keyed by the enclosing function.
func readViolations(fset *token.FileSet, f *ast.File, pkg string) map[string][]string {
	names := map[string]string{} // local import name → path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		local := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			local = im.Name.Name
		}
		names[local] = p
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		where := pkg + ".init"
		if ok {
			where = pkg + "." + funcName(fn)
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				// Called or passed along as a value, alike.
				if p, name, bad := forbidden(names, n); bad {
					out[where] = append(out[where], fmt.Sprintf("%s: %s uses %s.%s", fset.Position(n.Pos()), where, p, name))
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) < 3 {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] == "go/parser" && sel.Sel.Name == "ParseFile" {
					if id, ok := n.Args[2].(*ast.Ident); ok && id.Name == "nil" {
						out[where] = append(out[where], fmt.Sprintf("%s: %s calls parser.ParseFile with a nil source (it reads the file by name)", fset.Position(n.Pos()), where))
					}
				}
			}
			return true
		})
	}
	return out
}

func forbidden(names map[string]string, sel *ast.SelectorExpr) (string, string, bool) {
	x, ok := sel.X.(*ast.Ident)
	if !ok || x.Obj != nil { // x.Obj: a local variable, not a package
		return "", "", false
	}
	p, ok := names[x.Name]
	if !ok {
		return "", "", false
	}
	for _, n := range readCalls[p] {
		if n == sel.Sel.Name {
			return p, n, true
		}
	}
	return "", "", false
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestReadsGoThroughTheConfinedReader fails when a package that handles
// worktree or scratch paths opens a file or lists a directory by path
// itself, outside readExceptions.
func TestReadsGoThroughTheConfinedReader(t *testing.T) {
	used := map[string]bool{}
	var bad []string
	checked := 0
	for _, p := range listFiles(t) {
		pkg := rel(p.ImportPath)
		if !inReadScope(pkg) {
			continue
		}
		for _, name := range p.GoFiles {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for where, vs := range readViolations(fset, f, pkg) {
				if _, ok := readExceptions[where]; ok {
					used[where] = true
					continue
				}
				bad = append(bad, vs...)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d files checked: the read rule would check nothing", checked)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: read it through sandbox.Confined (ReadFile, Open, ReadDir, WalkDir) or sandbox.ReadFile/ReadPath/ReadDir", b)
	}
	var stale []string
	for where := range readExceptions {
		if !used[where] {
			stale = append(stale, where)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("readExceptions names functions that no longer open files by path (remove them): %v", stale)
	}
}

// TestReadRuleBites feeds the detector the shapes it must catch and those
// it must let through.
func TestReadRuleBites(t *testing.T) {
	src := `package p

import (
	"go/parser"
	fp "path/filepath"
	"os"
)

func a() { os.ReadFile("x") }
func b() { fp.WalkDir(".", nil) }
func c() { parser.ParseFile(nil, "x.go", nil, 0) }
func d() { walk := fp.WalkDir; _ = walk }
func (r *T) e() { _, _ = os.OpenRoot(".") }
func ok1() { os.Stat("x"); os.WriteFile("x", nil, 0o644) }
func ok2(os T) { os.ReadFile("x") }
func ok3(src []byte) { parser.ParseFile(nil, "x.go", src, 0) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0) // object resolution: ok2's os is a parameter
	if err != nil {
		t.Fatal(err)
	}
	got := readViolations(fset, f, "p")
	for _, want := range []string{"p.a", "p.b", "p.c", "p.d", "p.T.e"} {
		if len(got[want]) == 0 {
			t.Errorf("%s: not flagged", want)
		}
	}
	for _, clean := range []string{"p.ok1", "p.ok2", "p.ok3"} {
		if len(got[clean]) > 0 {
			t.Errorf("%s flagged: %v", clean, got[clean])
		}
	}
}
