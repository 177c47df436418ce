package javascript

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// Runner names the test runner a JavaScript project runs its tests with.
type Runner string

// The runners the adapter drives.
const (
	NodeTest Runner = "node:test"
	Vitest   Runner = "vitest"
	Jest     Runner = "jest"
)

// ErrNoRunner reports a project whose runner is not installed in its
// node_modules: bcode never downloads one.
var ErrNoRunner = errors.New("test runner not installed")

// maxPackageJSON caps the package.json and config files read to choose a
// runner.
const maxPackageJSON = 4 << 20

// project is where a test file's tests run: the directory of its nearest
// package.json (the snapshot's root without one) and the runner that
// project uses.
type project struct {
	Root   string // slash-separated, relative to the snapshot; "." for its root
	Runner Runner
	// TSX is set when tsx is a dependency: node --test then runs
	// TypeScript test files with --import tsx.
	TSX bool
	// VMModules is set when the test script runs node with
	// --experimental-vm-modules (jest's native ECMAScript modules), which
	// the runner then gets too: bcode clears NODE_OPTIONS, where such
	// scripts set it.
	VMModules bool
}

// packageJSON is what runner choice reads of a package.json.
type packageJSON struct {
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
	Scripts         map[string]string `json:"scripts"`
	Jest            json.RawMessage   `json:"jest"`
}

func (p packageJSON) depends(name string) bool {
	_, dep := p.Dependencies[name]
	_, dev := p.DevDependencies[name]
	return dep || dev
}

// Config files that name a runner, by the extensions their tools load.
var (
	vitestConfigs = configNames("vitest.config", ".ts", ".mts", ".cts", ".js", ".mjs", ".cjs")
	viteConfigs   = configNames("vite.config", ".ts", ".mts", ".cts", ".js", ".mjs", ".cjs")
	jestConfigs   = configNames("jest.config", ".js", ".ts", ".mjs", ".cjs", ".json")
	// testBlock finds vite's `test:` option (vitest's settings inside a
	// vite config).
	testBlock = regexp.MustCompile(`(?m)(^|[\s{,])test\s*:`)
	// scriptRunner finds the runner an npm test script starts, and
	// scriptNodeTest a script that runs node --test.
	scriptRunner   = regexp.MustCompile(`(^|[\s/;&|(])(vitest|jest)(\s|$|;|&|\|)`)
	scriptNodeTest = regexp.MustCompile(`(^|[\s;&|(])node\s[^;&|]*--test(\s|$|[;&|])`)
)

func configNames(stem string, exts ...string) []string {
	out := make([]string, len(exts))
	for i, e := range exts {
		out[i] = stem + e
	}
	return out
}

// projects chooses the runner of each test file's project, reading each
// package.json once.
type projects struct {
	dir   string
	conf  *sandbox.Confined
	cache map[string]project // by the directory looked up from
}

func newProjects(dir string) (*projects, error) {
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	return &projects{dir: dir, conf: conf, cache: map[string]project{}}, nil
}

func (ps *projects) Close() error { return ps.conf.Close() }

// of returns the project of the test file f (slash path relative to dir).
func (ps *projects) of(f string) project {
	return ps.at(path.Dir(f))
}

func (ps *projects) at(d string) project {
	if p, ok := ps.cache[d]; ok {
		return p
	}
	var p project
	if data, err := ps.conf.ReadFile(path.Join(d, "package.json"), maxPackageJSON); err == nil {
		p = ps.choose(d, data)
	} else if d == "." || d == "/" {
		p = project{Root: ".", Runner: NodeTest}
	} else {
		p = ps.at(path.Dir(d))
	}
	ps.cache[d] = p
	return p
}

// choose picks the runner of the project in directory d whose package.json
// is data. When several runners are named, the first of these wins:
//
//  1. the runner the "test" script starts (what `npm test` runs): vitest,
//     jest, or node --test;
//  2. a vitest.config.*, or a vite.config.* with a test block;
//  3. a jest.config.* or a "jest" key in package.json;
//  4. vitest as a dependency or devDependency;
//  5. jest as a dependency or devDependency;
//  6. otherwise node:test.
func (ps *projects) choose(d string, data []byte) project {
	var pj packageJSON
	_ = json.Unmarshal(data, &pj) // a package.json that does not parse names no runner
	p := project{Root: d, Runner: NodeTest, TSX: pj.depends("tsx"), VMModules: strings.Contains(pj.Scripts["test"], "--experimental-vm-modules")}
	if m := scriptRunner.FindStringSubmatch(pj.Scripts["test"]); m != nil {
		p.Runner = Runner(m[2])
		return p
	}
	if scriptNodeTest.MatchString(pj.Scripts["test"]) {
		return p
	}
	switch {
	case ps.anyExists(d, vitestConfigs) || ps.viteTestBlock(d):
		p.Runner = Vitest
	case ps.anyExists(d, jestConfigs) || len(pj.Jest) > 0:
		p.Runner = Jest
	case pj.depends("vitest"):
		p.Runner = Vitest
	case pj.depends("jest"):
		p.Runner = Jest
	}
	return p
}

func (ps *projects) anyExists(d string, names []string) bool {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(ps.dir, filepath.FromSlash(path.Join(d, n)))); err == nil {
			return true
		}
	}
	return false
}

func (ps *projects) viteTestBlock(d string) bool {
	for _, n := range viteConfigs {
		if data, err := ps.conf.ReadFile(path.Join(d, n), maxPackageJSON); err == nil && testBlock.Match(data) {
			return true
		}
	}
	return false
}

// runnerEntries are the scripts the runners' packages start from (their
// package.json "bin"), run with node so no shebang or .bin link is needed.
var runnerEntries = map[Runner]string{
	Vitest: "vitest/vitest.mjs",
	Jest:   "jest/bin/jest.js",
}

// runnerEntry finds the runner's script in the node_modules of the
// project's directory or of a directory above it inside the snapshot (a
// workspace hoists its packages to the root).
func runnerEntry(dir string, p project) (string, error) {
	entry := runnerEntries[p.Runner]
	for d := p.Root; ; d = path.Dir(d) {
		full := filepath.Join(dir, filepath.FromSlash(path.Join(d, "node_modules", entry)))
		if fi, err := os.Stat(full); err == nil && fi.Mode().IsRegular() {
			return full, nil
		}
		if d == "." || d == "/" || d == "" {
			break
		}
	}
	root := p.Root
	if root == "." {
		root = "the repository's root"
	}
	return "", fmt.Errorf("%s is not in the node_modules of %s (run npm ci there): %w", p.Runner, root, ErrNoRunner)
}

// String names the runner and project for details.
func (p project) String() string {
	return strings.TrimSuffix(string(p.Runner)+" in "+p.Root, " in .")
}

// runsTypeScript reports whether the project's runner runs TypeScript test
// files: vitest and jest as the project configures them (vitest
// transforms TypeScript itself, jest through ts-jest or babel), node
// --test only with tsx as a dependency (--import tsx). Node's own type
// stripping (22.6+) is not assumed.
func (p project) runsTypeScript() bool { return p.Runner != NodeTest || p.TSX }

// RunsTypeScript reports whether the project holding file (a slash path in
// the snapshot at dir) runs TypeScript tests (runsTypeScript), and names
// its runner. The gate judges a TypeScript change only where it does.
func (a *Adapter) RunsTypeScript(dir, file string) (bool, string) {
	ps, err := newProjects(dir)
	if err != nil {
		return false, ""
	}
	defer ps.Close()
	p := ps.of(file)
	return p.runsTypeScript(), p.String()
}
