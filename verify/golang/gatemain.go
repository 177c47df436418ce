package golang

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/testlog"
)

// bcode's TestMain. A test binary reports its tests on its own standard
// output, where the code under test can print too: a package initializer
// that prints "--- PASS" for every test and exits (syscall.Exit, any
// status) made a broken fix pass every test, and go test agrees. So every
// test binary the gate builds gets bcode's TestMain (a file added through
// go's -overlay, the repository untouched): after m.Run returns it appends
// one line to the run's log under the run's secret token: the package,
// m.Run's exit code and the -test.run the tests ran under. A
// package's passes count only when that line holds and agrees with the
// process's exit status; without it, nothing of the run reached the end
// of m.Run, and its passes are not taken.
//
// What this does not hold: code that reads the key (its file is readable
// until the end of the run, and an initializer runs before TestMain) or
// rewrites the testing package's state in memory; see docs/sandbox.md.

const (
	// gateMainDir holds the generated files and the overlay, inside the
	// snapshot so a container sees them at the same path. Its contents are
	// a function of the snapshot's test files, so go's build cache keys
	// them alike across gates. go ignores dot-directories in patterns.
	gateMainDir = ".bcode-gatemain"
	// gateMainFile is the generated file's name in the package directory
	// (through the overlay only).
	gateMainFile = "bcode_gate_main_test.go"
	// gateLogEnv names the log bcode's TestMain appends its line to.
	gateLogEnv = "BCODE_GO_TEST_LOG"
	// maxGateLog caps how much of the log is read.
	maxGateLog = 4 << 20
	// maxGoFile caps a Go file read to place bcode's TestMain; go list
	// would fail on a larger one anyway long before.
	maxGoFile = 16 << 20
)

// gateEnd is the line bcode's TestMain writes when m.Run has returned.
type gateEnd struct {
	Unit string
	Code int
	Run  string
}

// gateMains is bcode's TestMain placed in a snapshot's test packages.
type gateMains struct {
	overlay string // the -overlay file; "" when no package got one
	// units are the test packages, as units ("./dir"), and how bcode's
	// TestMain is in each.
	units map[string]placement
}

// placement is how bcode's TestMain is in a package.
type placement struct {
	wraps bool  // it wraps the package's own TestMain
	err   error // it could not be placed: the package's passes are not taken
}

// flags is the go command's -overlay flag, if any.
func (g gateMains) flags() []string {
	if g.overlay == "" {
		return nil
	}
	return []string{"-overlay=" + g.overlay}
}

// placeGateMains gives every test package of dir below the given package
// directories (slash-separated, relative to dir; nil: all of dir) bcode's
// TestMain through an overlay.
func placeGateMains(dir string, pkgDirs []string) (gateMains, error) {
	g := gateMains{units: map[string]placement{}}
	// The snapshot's files are the change's, and its tests may have run in
	// it already: every read is confined to it.
	c, err := sandbox.OpenConfined(dir)
	if err != nil {
		return g, fmt.Errorf("go adapter: %w", err)
	}
	defer c.Close()
	dirs, err := testPackageDirs(c, pkgDirs)
	if err != nil {
		return g, err
	}
	replace := map[string]string{}
	for _, d := range dirs {
		files, wraps, err := gateMainFiles(c, d)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			continue // no file of it builds here: go test runs nothing
		}
		if err != nil {
			// A package bcode cannot read as go would (a test file that
			// links out of the snapshot, a file named as bcode's): its
			// results cannot be told from what its code printed.
			g.units[packageOfDir(d)] = placement{err: err}
			continue
		}
		for rel, body := range files {
			src, err := writeGateFile(dir, body)
			if err != nil {
				return g, err
			}
			replace[filepath.Join(dir, filepath.FromSlash(rel))] = src
		}
		g.units[packageOfDir(d)] = placement{wraps: wraps}
	}
	if len(replace) == 0 {
		return g, nil
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return g, err
	}
	g.overlay, err = writeGateFile(dir, data)
	return g, err
}

// writeGateFile writes data into gateMainDir under a name made of its
// hash: the same file for the same content, whoever writes it. It is
// written anew each time (a rename over whatever a test left there), in a
// directory that must be a directory, not a link.
func writeGateFile(dir string, data []byte) (string, error) {
	root := filepath.Join(dir, gateMainDir)
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("go adapter: %w", err)
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("go adapter: %s is not a directory bcode made", root)
	}
	sum := sha256.Sum256(data)
	p := filepath.Join(root, hex.EncodeToString(sum[:12]))
	tmp, err := os.CreateTemp(root, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("go adapter: %w", err)
	}
	_, werr := tmp.Write(data)
	if err := tmp.Close(); werr != nil || err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("go adapter: writing %s: %v %v", p, werr, err)
	}
	return p, os.Rename(tmp.Name(), p)
}

// testPackageDirs lists the directories below pkgDirs (all of the
// snapshot when nil) that hold test files, as the go command would walk
// them for ./... (slash-separated, relative).
func testPackageDirs(c *sandbox.Confined, pkgDirs []string) ([]string, error) {
	hasTests := func(ents []fs.DirEntry) bool {
		for _, e := range ents {
			// Any file type: go reads a symlinked test file as the file
			// it names (gateMainFiles follows it within the snapshot).
			if !e.IsDir() && strings.HasSuffix(e.Name(), "_test.go") {
				return true
			}
		}
		return false
	}
	if pkgDirs != nil {
		var out []string
		for _, d := range pkgDirs {
			if ents, err := c.ReadDir(cleanRel(d)); err == nil && hasTests(ents) {
				out = append(out, cleanRel(d))
			}
		}
		return out, nil
	}
	// The walk lists each directory once; its own entries say which hold
	// test files (sorted by path, so a directory's files come together).
	var out []string
	err := c.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := path.Dir(p); hasTests([]fs.DirEntry{d}) && (len(out) == 0 || out[len(out)-1] != dir) {
			out = append(out, dir)
		}
		return nil
	})
	slices.Sort(out)
	return slices.Compact(out), err
}

// cleanRel is a package directory as the confined reader names it.
func cleanRel(d string) string {
	d = path.Clean(strings.TrimPrefix(d, "./"))
	if d == "" {
		return "."
	}
	return d
}

// readInTree reads the file rel of the snapshot, following a link to
// another file inside it once, as go test does for a symlinked test file.
func readInTree(c *sandbox.Confined, rel string) ([]byte, error) {
	fi, err := c.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := c.Readlink(rel)
		if err != nil {
			return nil, err
		}
		if path.IsAbs(t) {
			return nil, fmt.Errorf("%s links out of the snapshot", rel)
		}
		rel = path.Join(path.Dir(rel), t)
	}
	return c.ReadFile(rel, maxGoFile)
}

// gateMainFiles is what the overlay maps in one package directory: the
// generated file, and the test file whose TestMain it wraps (wraps),
// rewritten.
func gateMainFiles(c *sandbox.Confined, rel string) (files map[string][]byte, wraps bool, err error) {
	unit := packageOfDir(rel)
	ctx := build.Default
	ctx.CgoEnabled = true
	inTree := func(p string) string {
		r, _ := filepath.Rel(c.Dir(), p)
		return filepath.ToSlash(r)
	}
	ctx.OpenFile = func(p string) (io.ReadCloser, error) {
		data, err := readInTree(c, inTree(p))
		return io.NopCloser(bytes.NewReader(data)), err
	}
	ctx.ReadDir = func(p string) ([]fs.FileInfo, error) {
		ents, err := c.ReadDir(inTree(p))
		var out []fs.FileInfo
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				out = append(out, fi)
			}
		}
		return out, err
	}
	bp, err := ctx.ImportDir(filepath.Join(c.Dir(), filepath.FromSlash(rel)), 0)
	if err != nil {
		return nil, false, err
	}
	target := path.Join(rel, gateMainFile)
	if _, err := c.Lstat(target); err == nil {
		return nil, false, fmt.Errorf("%s exists", target)
	}
	user, err := findTestMain(c, rel, append(append([]string(nil), bp.TestGoFiles...), bp.XTestGoFiles...))
	if err != nil {
		return nil, false, err
	}
	if user != nil {
		return map[string][]byte{
			target:                        gateMainSource(user.pkgName, unit, true),
			path.Join(rel, user.fileName): user.rewritten,
		}, true, nil
	}
	name := bp.Name
	if len(bp.GoFiles)+len(bp.CgoFiles)+len(bp.TestGoFiles) == 0 {
		name = bp.Name + "_test" // external tests only
		if src, err := readInTree(c, path.Join(rel, bp.XTestGoFiles[0])); err == nil {
			if x, err := packageClause(src); err == nil {
				name = x
			}
		}
	}
	return map[string][]byte{target: gateMainSource(name, unit, false)}, false, nil
}

// userTestMain is a package's own TestMain, renamed so that bcode's wraps
// it, with its os.Exit calls going through bcode's exit.
type userTestMain struct {
	fileName  string
	pkgName   string
	rewritten []byte
}

// findTestMain finds a TestMain declared in the test files and rewrites its
// file: TestMain becomes bcodeGateUserTestMain, and each os.Exit(code) of
// the file (TestMain's own, or a helper's beside it) bcodeGateExit(code).
func findTestMain(c *sandbox.Confined, rel string, names []string) (*userTestMain, error) {
	for _, name := range names {
		src, err := readInTree(c, path.Join(rel, name))
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(src, []byte("TestMain")) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" || fn.Body == nil {
				continue
			}
			type edit struct {
				at, end int
				text    string
			}
			edits := []edit{{fset.Position(fn.Name.Pos()).Offset, fset.Position(fn.Name.End()).Offset, "bcodeGateUserTestMain"}}
			osName := importName(f, "os")
			if osName != "" {
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Exit" {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName {
							edits = append(edits, edit{fset.Position(sel.Pos()).Offset, fset.Position(sel.End()).Offset, "bcodeGateExit"})
						}
					}
					return true
				})
			}
			sort.Slice(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
			out := append([]byte(nil), src...)
			for _, e := range edits {
				out = append(out[:e.at:e.at], append([]byte(e.text), out[e.end:]...)...)
			}
			if osName != "" {
				// The file may have imported os for Exit alone.
				out = fmt.Appendf(out, "\nvar _ = %s.Exit\n", osName)
			}
			return &userTestMain{fileName: name, pkgName: f.Name.Name, rewritten: out}, nil
		}
	}
	return nil, nil
}

// importName is the name f refers to the package path by ("" when f does
// not import it, or imports it with a dot or a blank).
func importName(f *ast.File, pkgPath string) string {
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != pkgPath {
			continue
		}
		if imp.Name == nil {
			return path.Base(pkgPath)
		}
		if imp.Name.Name == "." || imp.Name.Name == "_" {
			return ""
		}
		return imp.Name.Name
	}
	return ""
}

// packageClause is the package name a Go file declares.
func packageClause(src []byte) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.PackageClauseOnly)
	if err != nil {
		return "", err
	}
	return f.Name.Name, nil
}

// gateMainSource is bcode's TestMain for the package named pkgName (unit
// in the gate's terms). wrap: the package has its own TestMain, renamed
// bcodeGateUserTestMain; m.Run's code is then read as go's generated main
// reads it when a TestMain returns. It compiles at every language version
// a go.mod can name, as the evidence's TestMain does (go 1.12 rejects 0o
// literals): no newer syntax in it.
func gateMainSource(pkgName, unit string, wrap bool) []byte {
	run := "bcodeGateEnd(m.Run())"
	if wrap {
		run = `bcodeGateUserTestMain(m)
	bcodeGateEnd(int(bcodegatereflect.ValueOf(m).Elem().FieldByName("exitCode").Int()))`
	}
	return fmt.Appendf(nil, `// Code generated by bcode for the gate's test run; it is not in the repository.

package %s

import (
	bcodegateflag "flag"
	bcodegateos "os"
	bcodegatereflect "reflect"
	bcodegatestrconv "strconv"
	bcodegatetesting "testing"
)

var _ = bcodegatereflect.ValueOf

func TestMain(m *bcodegatetesting.M) {
	%s
}

// bcodeGateExit is os.Exit for the package's own TestMain.
func bcodeGateExit(code int) { bcodeGateEnd(code) }

// bcodeGateEnd appends the line that says m.Run returned, under the
// run's token, and exits with code. Only packages every test binary
// links already: a MAC's or JSON's would lengthen every link.
func bcodeGateEnd(code int) {
	token, _ := bcodegateos.ReadFile(bcodegateos.Getenv(%q))
	run := ""
	if f := bcodegateflag.Lookup("test.run"); f != nil {
		run = f.Value.String()
	}
	line := string(token) + " " + bcodegatestrconv.Quote(%q) + " " + bcodegatestrconv.Itoa(code) + " " + bcodegatestrconv.Quote(run) + "\n"
	if f, err := bcodegateos.OpenFile(bcodegateos.Getenv(%q), bcodegateos.O_WRONLY|bcodegateos.O_APPEND|bcodegateos.O_CREATE, 0600); err == nil {
		f.WriteString(line)
		f.Close()
	}
	bcodegateos.Exit(code)
}
`, pkgName, run, testlog.KeyFileEnv, unit, gateLogEnv)
}

// packageGate is bcode's TestMain placed for one package and a run's
// token and log: what a single-package run (go test -json, or a compiled
// binary) needs; close the run when done.
func packageGate(dir, pkg string) (gateMains, *gateRun, []string, error) {
	mains, err := placeGateMains(dir, []string{strings.TrimPrefix(pkg, "./")})
	if err != nil {
		return mains, nil, nil, err
	}
	gr, env, err := newGateRun(dir)
	return mains, gr, env, err
}

// gateRun is one run's token and log, in a scratch directory inside the
// snapshot (a container sees it at the same path), removed by close.
// The token is a secret of the run's, not a MAC key: whoever can read it
// (the change's code, through its file) could compute a MAC as well, and
// copying it costs the test binary nothing to link.
type gateRun struct {
	scratch string
	token   string
}

// newGateRun makes a run's token and log; env is what the run's command
// adds to its environment.
func newGateRun(dir string) (*gateRun, []string, error) {
	scratch, err := os.MkdirTemp(dir, ".bcode-gotest-")
	if err != nil {
		return nil, nil, fmt.Errorf("go adapter: %w", err)
	}
	key, err := testlog.NewKey()
	token := hex.EncodeToString(key)
	if err == nil {
		err = os.WriteFile(filepath.Join(scratch, "key"), []byte(token), 0o644)
	}
	if err != nil {
		os.RemoveAll(scratch)
		return nil, nil, fmt.Errorf("go adapter: %w", err)
	}
	env := []string{testlog.KeyFileEnv + "=" + filepath.Join(scratch, "key"), gateLogEnv + "=" + filepath.Join(scratch, "log")}
	return &gateRun{scratch: scratch, token: token}, env, nil
}

// ends reads the lines of the run's log that carry its token, by unit.
func (g *gateRun) ends() map[string][]gateEnd {
	out := map[string][]gateEnd{}
	data, err := sandbox.ReadFile(g.scratch, "log", maxGateLog)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		if e, ok := parseGateEnd(line, g.token); ok {
			out[e.Unit] = append(out[e.Unit], e)
		}
	}
	return out
}

// parseGateEnd reads `<token> "<unit>" <code> "<run>"`.
func parseGateEnd(line, token string) (gateEnd, bool) {
	tok, rest, ok := strings.Cut(line, " ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(token)) != 1 {
		return gateEnd{}, false
	}
	var e gateEnd
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return gateEnd{}, false
	}
	e.Unit, _ = strconv.Unquote(q)
	codeText, runQ, ok := strings.Cut(strings.TrimPrefix(rest[len(q):], " "), " ")
	if !ok {
		return gateEnd{}, false
	}
	if e.Code, err = strconv.Atoi(codeText); err != nil {
		return gateEnd{}, false
	}
	if e.Run, err = strconv.Unquote(runQ); err != nil || e.Unit == "" {
		return gateEnd{}, false
	}
	return e, true
}

func (g *gateRun) close() { os.RemoveAll(g.scratch) }

// judgeEnds takes each injected package's test results at their word only
// as far as its end line allows. A clean exit without the line
// (where the package has no TestMain of its own), or
// a line the run's exit status or selection contradicts, is an altered
// report; a failed process without a failing test (with or without the
// line) has its passes not taken. A failed process with a failing or
// unended test and no line is a crash, as before: what ended first stands.
func judgeEnds(s *Stream, g gateMains, mods []modulePath, ends map[string][]gateEnd, pattern string) {
	for _, p := range s.Packages {
		unit, ok := unitName(p.Package, mods)
		pl, injected := g.units[unit]
		if !ok || !injected || len(p.Tests) == 0 || p.BuildFailed() {
			continue
		}
		es := ends[unit]
		switch {
		case pl.err != nil:
			markRuns(p, passed, notTaken,
				fmt.Sprintf("bcode could not place its TestMain in this package (%v): its passes are not taken", pl.err))
		case len(es) == 0 && p.Action == "pass" && pl.wraps:
			// The package's own TestMain may exit from a helper in
			// another file, which bcode does not rewrite.
			markRuns(p, passed, notTaken,
				"the package's TestMain exited without passing through bcode's (os.Exit in another file?): its passes are not taken")
		case len(es) == 0 && p.Action == "pass":
			markRuns(p, func(*TestRun) bool { return true }, altered,
				verify.ReportAlteredMarker+" the test binary exited 0 but bcode's TestMain never returned from m.Run: something ended the process and printed the results itself")
		case len(es) == 0 && !anyFailed(p):
			// A test that crashed the binary (a panic, an exit, a fatal
			// error) leaves a failed or unended run, and the passes before
			// it stand; a failed process whose every test passed does not.
			markRuns(p, passed, notTaken,
				"the test binary failed without a failing test, before bcode's TestMain returned from m.Run: its passes are not taken")
		case len(es) == 0:
			// A crash: what ended before it stands.
		case !consistentEnds(es, p, pattern):
			markRuns(p, func(*TestRun) bool { return true }, altered,
				fmt.Sprintf("%s bcode's TestMain saw m.Run return %d under -test.run=%q; the run reported otherwise", verify.ReportAlteredMarker, es[len(es)-1].Code, es[len(es)-1].Run))
		case es[len(es)-1].Code != 0 && !anyFailed(p):
			markRuns(p, passed, notTaken,
				fmt.Sprintf("m.Run returned %d although no test failed (the package's TestMain, a leak check?): its passes are not taken", es[len(es)-1].Code))
		}
	}
}

// consistentEnds: every end line ran the selection bcode gave, and the
// last one's code agrees with the package's exit status.
func consistentEnds(es []gateEnd, p *PackageRun, pattern string) bool {
	for _, e := range es {
		if e.Run != pattern {
			return false
		}
	}
	return (es[len(es)-1].Code == 0) == (p.Action == "pass")
}

func passed(r *TestRun) bool { return r.Action == "pass" }

func anyFailed(p *PackageRun) bool {
	for _, r := range p.Tests {
		if r.Action != "pass" && r.Action != "skip" {
			return true
		}
	}
	return false
}

// How markRuns changes a run.
const (
	altered  = "altered"
	notTaken = "not_taken"
)

func markRuns(p *PackageRun, which func(*TestRun) bool, how, why string) {
	for _, r := range p.Tests {
		if which(r) {
			r.Verdict, r.Why = how, why
		}
	}
}
