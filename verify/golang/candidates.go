package golang

import (
	"context"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// maxImportScan caps the Go files whose imports Candidates reads.
const maxImportScan = 50000

// Candidates implements verify.Adapter. A Go test ID is a candidate when it
// lives in a package whose tests the change touches: a changed _test.go
// file (a symbolic link counts as the file it points to, as go test reads
// it), changed testdata, or a changed test-only package (one whose code
// imports "testing", or sits under vendor/ or a test-named directory, and
// that only tests and other test-only packages import) — then every
// package whose tests import it.
func (a *Adapter) Candidates(ctx context.Context, _ sandbox.Runner, dir string, change *verify.Change) (verify.Candidates, error) {
	var c verify.Candidates
	units := map[string]bool{}
	var code []verify.FileChange // changed non-test Go files: maybe test-only packages
	for _, f := range change.Files {
		p := f.Path
		switch {
		case hasElem(p, "testdata"):
			c.Support = append(c.Support, p)
			units[packageOfDir(beforeElem(p, "testdata"))] = true
		case strings.HasSuffix(p, "_test.go"):
			c.Support = append(c.Support, p)
			if !ignoredByGo(p) {
				units[packageOfDir(path.Dir(p))] = true
			}
			if f.HeadMode == modeSymlink && f.Head != nil {
				// go test reads the file the link points to: it is test
				// support wherever it lives.
				if t := path.Join(path.Dir(p), string(f.Head)); !path.IsAbs(string(f.Head)) && t != ".." && !strings.HasPrefix(t, "../") {
					c.Support = append(c.Support, t)
				}
			}
		case strings.HasSuffix(p, ".go"):
			code = append(code, f)
		}
	}
	if len(code) > 0 {
		idx, err := scanImports(dir)
		if err != nil {
			return c, err
		}
		for _, f := range code {
			d := path.Dir(f.Path)
			if !idx.testOnly(d, map[string]bool{}) {
				continue
			}
			c.Support = append(c.Support, f.Path)
			for _, u := range idx.testImporters(d) {
				units[packageOfDir(u)] = true
			}
		}
	}
	for u := range units {
		if dirHasTests(dir, u) {
			c.Units = append(c.Units, u)
		}
	}
	sort.Strings(c.Units)
	sort.Strings(c.Support)
	return c, nil
}

func hasElem(p, elem string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == elem {
			return true
		}
	}
	return false
}

// beforeElem is the directory above the first elem of p: "a/testdata/x" → "a".
func beforeElem(p, elem string) string {
	parts := strings.Split(p, "/")
	for i, e := range parts {
		if e == elem {
			if i == 0 {
				return "."
			}
			return strings.Join(parts[:i], "/")
		}
	}
	return path.Dir(p)
}

// dirHasTests reports whether the package directory u of the snapshot in
// dir holds a _test.go file (a link to one counts).
func dirHasTests(dir, u string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(u, "."), "/")
	if rel == "" {
		rel = "."
	}
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return false
	}
	defer conf.Close()
	entries, err := conf.ReadDir(rel)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.go") && !e.IsDir() {
			return true
		}
	}
	return false
}

// importIndex is who imports what in a snapshot, by package directory.
type importIndex struct {
	importPath  map[string]string          // dir → import path
	byPath      map[string]string          // import path → dir
	testImports map[string]map[string]bool // dir → import paths its _test.go files import
	codeImports map[string]map[string]bool // dir → import paths its other files import
	testing     map[string]bool            // dir whose non-test files import "testing"
}

// maxScannedSource caps one Go file the import scan reads; one over it is
// left out of the scan (go test, which builds it, says what it makes of it).
const maxScannedSource = 16 << 20

// scanImports reads the imports of every Go file of the snapshot (vendor
// included: vendored assertion libraries are test support too).
func scanImports(dir string) (*importIndex, error) {
	l, err := findModules(dir)
	if err != nil {
		return nil, err
	}
	mods := modulePaths(dir, l)
	idx := &importIndex{
		importPath: map[string]string{}, byPath: map[string]string{},
		testImports: map[string]map[string]bool{}, codeImports: map[string]map[string]bool{},
		testing: map[string]bool{},
	}
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	fset := token.NewFileSet()
	n := 0
	err = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || !d.Type().IsRegular() || n >= maxImportScan {
			return nil
		}
		n++
		rel := path.Dir(p)
		if _, ok := idx.importPath[rel]; !ok {
			ip := vendoredPath(rel)
			if ip == "" {
				ip, _ = importPathOfDir(rel, mods)
			}
			idx.importPath[rel] = ip
			if ip != "" {
				idx.byPath[ip] = rel
			}
		}
		// Read here, confined and capped: the parser would read the
		// file by its name, whatever it is.
		src, err := conf.ReadFile(p, maxScannedSource)
		if err != nil {
			return nil
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, filepath.FromSlash(p)), src, parser.ImportsOnly)
		if err != nil || f == nil {
			return nil
		}
		into := idx.codeImports
		if strings.HasSuffix(name, "_test.go") {
			into = idx.testImports
		}
		if into[rel] == nil {
			into[rel] = map[string]bool{}
		}
		for _, im := range f.Imports {
			ip, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				continue
			}
			into[rel][ip] = true
			if ip == "testing" && !strings.HasSuffix(name, "_test.go") {
				idx.testing[rel] = true
			}
		}
		return nil
	})
	return idx, err
}

// vendoredPath is the import path of a directory under a vendor/ tree, or "".
func vendoredPath(rel string) string {
	parts := strings.Split(rel, "/")
	for i, e := range parts {
		if e == "vendor" && i+1 < len(parts) {
			return strings.Join(parts[i+1:], "/")
		}
	}
	return ""
}

func importPathOfDir(rel string, mods []modulePath) (string, bool) {
	best := -1
	for i, m := range mods {
		if m.root == "." || rel == m.root || strings.HasPrefix(rel, m.root+"/") {
			if best < 0 || len(m.root) > len(mods[best].root) || mods[best].root == "." {
				best = i
			}
		}
	}
	if best < 0 {
		return "", false
	}
	m := mods[best]
	sub := rel
	if m.root != "." {
		sub = strings.TrimPrefix(strings.TrimPrefix(rel, m.root), "/")
	}
	if sub == "." || sub == "" {
		return m.path, true
	}
	return m.path + "/" + sub, true
}

// testNamed reports whether a package directory is named like test
// support: testutil, internal/testenv, assert, mocks, fakes.
func testNamed(d string) bool {
	for _, e := range strings.Split(d, "/") {
		e = strings.ToLower(e)
		if strings.Contains(e, "test") || strings.Contains(e, "mock") || strings.Contains(e, "fake") || e == "assert" || e == "require" {
			return true
		}
	}
	return false
}

// testOnly reports whether the package in d exists for tests only: it
// looks like test support, and no package's code imports it except
// test-only packages.
func (x *importIndex) testOnly(d string, visiting map[string]bool) bool {
	if visiting[d] {
		return true
	}
	visiting[d] = true
	if !x.testing[d] && vendoredPath(d) == "" && !testNamed(d) {
		return false
	}
	ip := x.importPath[d]
	if ip == "" {
		return false
	}
	for e, imps := range x.codeImports {
		if e != d && imps[ip] && !x.testOnly(e, visiting) {
			return false
		}
	}
	return true
}

// testImporters are the package directories whose tests import the
// package in d, directly or through other test-only packages.
func (x *importIndex) testImporters(d string) []string {
	var out []string
	seen := map[string]bool{d: true}
	queue := []string{d}
	found := map[string]bool{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		ip := x.importPath[cur]
		if ip == "" {
			continue
		}
		for e, imps := range x.testImports {
			if imps[ip] && !found[e] {
				found[e] = true
				out = append(out, e)
			}
		}
		for e, imps := range x.codeImports {
			if imps[ip] && !seen[e] {
				seen[e] = true
				queue = append(queue, e)
			}
		}
	}
	if x.testImports[d] != nil {
		out = append(out, d) // its own tests
	}
	sort.Strings(out)
	return out
}
