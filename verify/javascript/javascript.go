// Package javascript is the verification gate's JavaScript and TypeScript
// adapter. It finds the tests a change adds or modifies by parsing both
// sides of each test file in Go (tdewolff/parse's js package, after
// esbuild strips TypeScript types and JSX), runs tests with a runner (the
// first is Node's built-in `node --test`) through a sandbox.Runner and a
// reporter bcode writes, computes the test files a change reaches through
// relative imports, and reports deleted, newly skipped and newly focused
// (.only) tests.
//
// A test is named by its file (Test.Package and Test.File) and its path of
// describe/suite and test names joined by NameSep: "calc › adds" for
// it('adds') inside describe('calc'); a t.test subtest adds its name to the
// path of the test that starts it.
package javascript

import (
	"fmt"
	"path"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// NameSep joins the describe path and the test name in Test.Name. It is the
// separator Jest prints between those names: unlike "/", ">" or "::" it
// seldom appears inside a test's own name.
const NameSep = " › "

// language is Test.Language for this adapter.
const language = "javascript"

// Adapter is the JavaScript language support of the gate.
type Adapter struct {
	// Node is the node executable on the sandbox's PATH (empty: "node").
	Node string
	// Checkout is the user's checkout, whose installed node_modules
	// (untracked, so absent from snapshots) the tests import: each run
	// links them into the snapshot it runs in (linkModules). Empty for an
	// agent's change.
	Checkout string
}

// New returns an Adapter that runs tests with node's built-in runner.
func New() *Adapter { return &Adapter{} }

var _ verify.Adapter = (*Adapter)(nil)

// Language implements verify.Adapter.
func (a *Adapter) Language() string { return language }

func (a *Adapter) node() string {
	if a.Node != "" {
		return a.Node
	}
	return "node"
}

// sourceExts are the extensions of the files this adapter owns; typeScript
// those that esbuild must turn into JavaScript before they are parsed.
var (
	sourceExts = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".jsx": true, ".ts": true, ".mts": true, ".cts": true, ".tsx": true}
	typeScript = map[string]bool{".ts": true, ".mts": true, ".cts": true, ".tsx": true}
)

// Owns implements verify.Adapter: JavaScript and TypeScript files outside
// node_modules (other people's code, never the change's).
func (a *Adapter) Owns(p string) bool {
	if !sourceExts[path.Ext(p)] {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if el == "node_modules" {
			return false
		}
	}
	return true
}

// IsTestFile implements verify.Adapter with node --test's default patterns
// (Node's "Running tests from the command line"): **/*.test.EXT,
// **/*-test.EXT, **/*_test.EXT, **/test-*.EXT, **/test.EXT and
// **/test/**/*.EXT, where EXT is js, cjs or mjs, and ts, cts or mts for
// TypeScript (.jsx and .tsx are never run by node's default patterns).
func (a *Adapter) IsTestFile(p string) bool {
	ext := path.Ext(p)
	switch ext {
	case ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts":
	default:
		return false
	}
	if !a.Owns(p) {
		return false
	}
	stem := strings.TrimSuffix(path.Base(p), ext)
	switch {
	case stem == "test", strings.HasPrefix(stem, "test-"),
		strings.HasSuffix(stem, ".test"), strings.HasSuffix(stem, "-test"), strings.HasSuffix(stem, "_test"):
		return true
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if el == "test" {
			return true
		}
	}
	return false
}

// isTypeScript reports whether p must be stripped of types to run or parse.
func isTypeScript(p string) bool { return typeScript[path.Ext(p)] }

// fileOf is where a test is defined.
func fileOf(t verify.Test) string {
	if t.File != "" {
		return t.File
	}
	return t.Package
}

// checkTest refuses tests that cannot name a file and test safely on a
// command line.
func checkTest(t verify.Test) error {
	f := fileOf(t)
	switch {
	case f == "" || t.Name == "":
		return fmt.Errorf("javascript test %q in %q: file and name are required", t.Name, f)
	case path.IsAbs(f) || f != path.Clean(f) || f == ".." || strings.HasPrefix(f, "../"):
		return fmt.Errorf("javascript test file %q: not a clean path inside the repository", f)
	case strings.HasPrefix(f, "-"):
		return fmt.Errorf("javascript test file %q: must not start with '-'", f)
	case strings.ContainsAny(f, "\x00\n") || strings.Contains(t.Name, "\x00"):
		return fmt.Errorf("javascript test %q in %q: control characters in the name", t.Name, f)
	}
	return nil
}
