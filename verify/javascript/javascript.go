// Package javascript is the verification gate's JavaScript and TypeScript
// adapter. It finds the tests a change adds or modifies by parsing both
// sides of each test file in Go (tdewolff/parse's js package, after
// esbuild strips TypeScript types and JSX), runs tests through a
// sandbox.Runner with the runner each project uses and a reporter bcode
// writes, computes the test files a change reaches through relative
// imports, and reports deleted, newly skipped, failing-expected, newly
// focused (.only) tests and changes to the runners' configuration.
//
// A test is named by its file (Test.Package and Test.File) and its path of
// describe/suite and test names joined by NameSep: "calc › adds" for
// it('adds') inside describe('calc'); a t.test subtest adds its name to the
// path of the test that starts it; each row of test.each, it.each or
// describe.each is named as the runner expands it ("calc › 1+1=2" for
// test.each([[1, 1, 2]])('%i+%i=%i')) when the table and the name are
// literal, and is not a test bcode can name otherwise.
//
// # Runners
//
// Each test file runs with the runner of its project: the directory of
// its nearest package.json (the repository's root without one). The first
// of these that holds picks it:
//
//  1. the runner the project's "test" script starts (vitest, jest or
//     node --test);
//  2. a vitest.config.*, or a vite.config.* with a test block: vitest;
//  3. a jest.config.* or a "jest" key in package.json: jest;
//  4. vitest as a dependency or devDependency;
//  5. jest as a dependency or devDependency;
//  6. otherwise Node's built-in runner, node --test.
//
// vitest and jest run from the project's own node_modules (the
// project's directory or one above it, as a workspace hoists them), by
// their packages' scripts run with node; bcode never downloads a runner,
// and a missing one is an EnvError saying to run npm ci. Each run loads
// the project's configuration (transforms, setup files) but bcode's
// reporter in place of the project's (vitest --reporter, jest
// --reporters), and all three reporters write the same JSON lines.
//
// # TypeScript
//
// vitest runs TypeScript test files itself and jest as the project
// configures it (ts-jest or babel). node --test runs them only when tsx
// is a dependency of the project, with --import tsx; otherwise they are
// an EnvError (ErrTypeScriptRun) and are parsed, never run. Node's own
// type stripping (22.6+) is not assumed.
package javascript

import (
	"fmt"
	"path"
	"strings"
	"sync"

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
	// Modules are installed packages by project (a slash directory
	// relative to the root, "." the root, to its node_modules): an agent's
	// change gets its base's locked packages (Packages.Install), linked
	// into every snapshot as a checkout's are. A project Modules names
	// takes them from there, not from Checkout.
	Modules map[string]string

	mu     sync.Mutex
	linked map[string]bool // snapshots linkModules has walked: once each
}

// New returns an Adapter that runs each project's tests with its runner
// (node --test, vitest or jest).
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

// IsTestFile implements verify.Adapter with the default patterns of the
// three runners. node --test's ("Running tests from the command line"):
// **/*.test.EXT, **/*-test.EXT, **/*_test.EXT, **/test-*.EXT, **/test.EXT
// and **/test/**/*.EXT, where EXT is js, cjs or mjs, and ts, cts or mts
// for TypeScript; vitest's and jest's add **/*.spec.EXT and
// **/__tests__/**/*.EXT, where EXT may also be jsx or tsx, whose
// *.test.EXT files count too.
func (a *Adapter) IsTestFile(p string) bool {
	ext := path.Ext(p)
	jsx := false
	switch ext {
	case ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts":
	case ".jsx", ".tsx":
		jsx = true
	default:
		return false
	}
	if !a.Owns(p) {
		return false
	}
	stem := strings.TrimSuffix(path.Base(p), ext)
	switch {
	case strings.HasSuffix(stem, ".test"), strings.HasSuffix(stem, ".spec"):
		return true
	case jsx:
	case stem == "test", strings.HasPrefix(stem, "test-"), strings.HasSuffix(stem, "-test"), strings.HasSuffix(stem, "_test"):
		return true
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if el == "__tests__" || (el == "test" && !jsx) {
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
	case strings.ContainsAny(f, "\x00\n"):
		return fmt.Errorf("javascript test file %q: control characters in the name", f)
	}
	return nil
}
