package javascript

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

func TestProjectRunner(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json":                         `{"devDependencies": {"jest": "29.7.0", "vitest": "3.2.4"}}`,
		"test/root.test.js":                    "",
		"packages/v/package.json":              `{"devDependencies": {"vitest": "3.2.4"}}`,
		"packages/v/src/deep/a.test.ts":        "",
		"packages/j/package.json":              `{"name": "j", "jest": {"testEnvironment": "node"}}`,
		"packages/j/a.test.js":                 "",
		"packages/jc/package.json":             `{"devDependencies": {"vitest": "3.2.4"}}`,
		"packages/jc/jest.config.js":           "module.exports = {};\n",
		"packages/jc/a.test.js":                "",
		"packages/vite/package.json":           `{}`,
		"packages/vite/vite.config.ts":         "export default defineConfig({\n  test: { environment: 'node' },\n});\n",
		"packages/vite/a.test.ts":              "",
		"packages/plainvite/package.json":      `{}`,
		"packages/plainvite/vite.config.ts":    "export default defineConfig({ plugins: [] });\n",
		"packages/plainvite/a.test.js":         "",
		"packages/script/package.json":         `{"scripts": {"test": "NODE_OPTIONS=--experimental-vm-modules jest --ci"}, "devDependencies": {"vitest": "1"}}`,
		"packages/script/a.test.js":            "",
		"packages/node/package.json":           `{"devDependencies": {"tsx": "4"}}`,
		"packages/node/a.test.ts":              "",
		"packages/nt/package.json":             `{"scripts": {"test": "node --test-reporter=spec --test test/"}, "devDependencies": {"vitest": "3"}}`,
		"packages/nt/a.test.js":                "",
		"packages/broken/package.json":         `{not json`,
		"packages/broken/a.test.js":            "",
		"packages/v/vendor/node_modules/x.js":  "",
		"other/no-package-here/deep/a.test.js": "",
	})
	ps, err := newProjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	for file, want := range map[string]project{
		"test/root.test.js":                    {Root: ".", Runner: Vitest},
		"other/no-package-here/deep/a.test.js": {Root: ".", Runner: Vitest},
		"packages/v/src/deep/a.test.ts":        {Root: "packages/v", Runner: Vitest},
		"packages/j/a.test.js":                 {Root: "packages/j", Runner: Jest},
		"packages/jc/a.test.js":                {Root: "packages/jc", Runner: Jest},
		"packages/vite/a.test.ts":              {Root: "packages/vite", Runner: Vitest},
		"packages/plainvite/a.test.js":         {Root: "packages/plainvite", Runner: NodeTest},
		"packages/script/a.test.js":            {Root: "packages/script", Runner: Jest, VMModules: true},
		"packages/node/a.test.ts":              {Root: "packages/node", Runner: NodeTest, TSX: true},
		"packages/broken/a.test.js":            {Root: "packages/broken", Runner: NodeTest},
		"packages/nt/a.test.js":                {Root: "packages/nt", Runner: NodeTest},
	} {
		if got := ps.of(file); got != want {
			t.Errorf("project of %s = %+v, want %+v", file, got, want)
		}
	}
	empty := t.TempDir()
	ps2, err := newProjects(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer ps2.Close()
	if got := ps2.of("a/b.test.js"); got != (project{Root: ".", Runner: NodeTest}) {
		t.Errorf("without package.json: %+v, want node:test at the root", got)
	}
}

// A project whose runner is not installed: every test is an EnvError
// saying to run npm ci, and nothing is downloaded.
func TestRunnerNotInstalled(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json":     `{"devDependencies": {"vitest": "3.2.4"}}`,
		"a.test.ts":        "import { test } from 'vitest';\ntest('x', () => {});\n",
		"j/package.json":   `{"devDependencies": {"jest": "29.7.0"}}`,
		"j/a.test.js":      "test('y', () => {});\n",
		"j/node_modules/x": "not jest",
	})
	tests := []verify.Test{
		{Language: language, Package: "a.test.ts", File: "a.test.ts", Name: "x"},
		{Language: language, Package: "j/a.test.js", File: "j/a.test.js", Name: "y"},
	}
	res, err := New().RunTests(t.Context(), host.New(), dir, tests, verify.RunOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != verify.EnvError || !strings.Contains(r.Detail, "npm ci") {
			t.Errorf("%s: %s (%q), want an EnvError naming npm ci", tests[i].Name, r.Outcome, r.Detail)
		}
	}
	if !strings.Contains(res[0].Detail, "vitest") || !strings.Contains(res[1].Detail, "jest is not in the node_modules of j ") {
		t.Errorf("details do not name the runner and project: %q, %q", res[0].Detail, res[1].Detail)
	}
	suite, err := New().RunSuite(t.Context(), host.New(), dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if suite.Outcome != verify.EnvError || !strings.Contains(suite.Detail, "npm ci") {
		t.Errorf("RunSuite: %s (%q), want an EnvError naming npm ci", suite.Outcome, suite.Detail)
	}
}

func TestFullNamePattern(t *testing.T) {
	got := fullNamePattern([]verify.Test{{Name: "calc › 1+1=2"}, {Name: "a.b (c)"}, {Name: "calc › 1+1=2"}})
	if want := `^(?:a\.b \(c\)|calc 1\+1=2)$`; got != want {
		t.Errorf("fullNamePattern = %q, want %q", got, want)
	}
}

// The vitest and jest reporters' lines are read by the node reporter's
// parser: a timed-out test is a Timeout, todo a Skip, a file that did not
// load an ImportError.
func TestParseRunnerRecords(t *testing.T) {
	dir := "/repo"
	log := strings.Join([]string{
		`{"file":"/repo/test/a.test.ts","path":["calc","passes"],"outcome":"pass","ms":2.5}`,
		`{"file":"/repo/test/a.test.ts","path":["calc","slow"],"outcome":"fail","ms":1003,"error":"Error: Test timed out in 1000ms.","failure":"testTimeoutFailure"}`,
		`{"file":"/repo/test/a.test.ts","path":["calc","later"],"outcome":"todo","ms":0,"reason":""}`,
		`{"file":"/repo/test/b.test.js","path":["/repo/test/b.test.js"],"outcome":"fail","load":true,"error":"Cannot find module '../missing.js'"}`,
		`{"file":"/repo/test/a.test.ts","path":["torn`,
	}, "\n")
	recs := parseRecords([]byte(log), dir)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 (the torn line dropped): %+v", len(recs), recs)
	}
	byName, loads := index(recs)
	tc := func(name string) verify.Test { return verify.Test{File: "test/a.test.ts", Name: name} }
	for name, want := range map[string]verify.Outcome{"calc › passes": verify.Pass, "calc › slow": verify.Timeout, "calc › later": verify.Skip} {
		rec, ok := byName[key("test/a.test.ts", name)]
		if !ok {
			t.Errorf("no record for %q", name)
			continue
		}
		if got := rec.result(tc(name)).Outcome; got != want {
			t.Errorf("%q: %s, want %s", name, got, want)
		}
	}
	if oc, d := loads["test/b.test.js"].loadFailure(); oc != verify.ImportError || !strings.Contains(d, "missing.js") {
		t.Errorf("load failure: %s %q", oc, d)
	}
}

func TestStaticTestsEach(t *testing.T) {
	src := `import { describe, expect, it, test } from 'vitest';

describe('table', () => {
  test.each([[1, 1, 2], [1, -1, 0], [0.5, 0.25, 0.75]])('%i+%d=%f', (a, b, want) => {
    expect(a + b).toBe(want);
  });
  it.each(['a', "b"])('letter %s (%#, %$)', (s) => {});
  test.each([{ a: 1, b: true }])('obj $a $b', ({ a }) => {});
  test.each([{ s: 'quoted' }])('obj $s', () => {});
  test.each(rows)('from a variable %s', () => {});
  test.each([[{}]])('%o', () => {});
  test.concurrent.each([[1]])('concurrent %i', () => {});
  test.for([[2]])('for %i', () => {});
});

describe.each([['x'], ['y']])('suite %s', (name) => {
  it('inner', () => {});
});

test.fails('expected to fail', () => {});
it.failing('jest failing', () => {});
test.skipIf(process.env.CI)('not on CI', () => {});
describe.runIf(true)('conditional', () => {
  it('inside', () => {});
});
test.concurrent('parallel', async () => {});
`
	got, err := staticTests("a.test.ts", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	byName := names(got)
	var all []string
	for _, s := range got {
		all = append(all, s.Name)
	}
	for _, n := range []string{
		"table › 1+1=2", "table › 1+-1=0", "table › 0+0.25=0.75", "table › letter a (0, 1)", "table › letter b (1, 2)",
		"table › obj 1 true", "table › concurrent 1", "table › for 2", "suite x › inner", "suite y › inner",
		"expected to fail", "jest failing", "not on CI", "conditional › inside", "parallel",
	} {
		if _, ok := byName[n]; !ok {
			t.Errorf("%q not found among %q", n, all)
		}
	}
	for _, n := range all {
		if strings.Contains(n, "%") || strings.Contains(n, "$") || strings.Contains(n, "variable") {
			t.Errorf("%q: a row whose name cannot be read is listed", n)
		}
	}
	if !byName["expected to fail"].Fails || !byName["jest failing"].Fails || byName["parallel"].Fails {
		t.Errorf(".fails/.failing not read: %+v", got)
	}
	if !byName["not on CI"].Conditional || !byName["conditional › inside"].Conditional || byName["parallel"].Conditional {
		t.Errorf(".skipIf/.runIf not read: %+v", got)
	}
	if byName["suite x › inner"].Body == byName["suite y › inner"].Body {
		t.Errorf("rows of a describe.each share a body: a changed row would not change its tests")
	}
}

func TestChangedTestsEachRows(t *testing.T) {
	c := change(map[string][2]string{
		"each.test.js": {
			"test.each([[1, 2], [2, 3], [3, 4]])('inc %i', (a, b) => { expect(a + 1).toBe(b); });\n",
			"test.each([[1, 2], [2, 4], [3, 4], [5, 6]])('inc %i', (a, b) => { expect(a + 1).toBe(b); });\n",
		},
	})
	got, err := New().ChangedTests(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, t := range got {
		ids = append(ids, t.Name)
	}
	if want := []string{"inc 2", "inc 5"}; !slices.Equal(ids, want) {
		t.Errorf("ChangedTests = %q, want %q (the changed row and the added one)", ids, want)
	}
}

func TestTamperRunners(t *testing.T) {
	const base = `describe('calc', () => {
  it('a', () => {});
  it('b', () => {});
});
test('c', () => {});
test('d', () => {});
test('e', () => {});
`
	c := change(map[string][2]string{
		"calc.test.ts": {base, `describe('calc', () => {
  it.fails('a', () => {});
  it.skipIf(process.env.CI)('b', () => {});
});
test.failing('c', () => {});
test.todo('d');
test.concurrent('e', () => {});
`},
		"jest.config.js":                   {"module.exports = {\n  testPathIgnorePatterns: ['/node_modules/'],\n};\n", "module.exports = {\n  testPathIgnorePatterns: ['/node_modules/', '/test/'],\n};\n"},
		"vite.config.ts":                   {"export default {\n  test: { exclude: [] },\n  plugins: [],\n};\n", "export default {\n  test: {\n    exclude: ['**/calc*'],\n  },\n  plugins: [],\n};\n"},
		"a/vite.config.ts":                 {"export default {\n  test: { include: ['x'] },\n  plugins: [],\n};\n", "export default {\n  test: {\n    include: [ 'x' ] },\n  plugins: [react()],\n};\n"},
		"package.json":                     {`{"jest": {"passWithNoTests": false}, "scripts": {"test": "jest"}}`, `{"jest": {"passWithNoTests": true}, "scripts": {"test": "jest --passWithNoTests"}}`},
		"b/package.json":                   {`{"jest": {"x": 1}, "dependencies": {}}`, `{"jest": { "x" : 1 }, "dependencies": {"y": "1"}}`},
		"node_modules/vitest/vitest.mjs":   {"run();\n", "pass();\n"},
		"node_modules/vitest/a.test.js":    {"", "test.only('x', () => {});\n"},
		"node_modules/jest/jest.config.js": {"", "module.exports = {};\n"},
	})
	got, err := New().Tamper(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"calc.test.ts " + verify.FindingTestSkipped + ` "calc › a" is newly marked .fails`,
		"calc.test.ts " + verify.FindingTestSkipped + ` "calc › b" newly runs only under a condition`,
		"calc.test.ts " + verify.FindingTestSkipped + ` "c" is newly marked .fails`,
		"calc.test.ts " + verify.FindingTestSkipped + ` "d" is newly skipped`,
		"jest.config.js " + verify.FindingTestInfra + " testPathIgnorePatterns changed",
		"vite.config.ts " + verify.FindingTestInfra + " exclude changed",
		"package.json " + verify.FindingTestInfra + " passWithNoTests changed",
		"package.json " + verify.FindingTestInfra + " test script",
		"node_modules/jest/jest.config.js " + verify.FindingTestInfra + " (node_modules): 3 files",
	}
	for _, w := range want {
		p, rest, _ := strings.Cut(w, " ")
		code, text, _ := strings.Cut(rest, " ")
		found := false
		for _, f := range got {
			found = found || (f.Path == p && f.Code == code && strings.Contains(f.Message, text))
		}
		if !found {
			t.Errorf("no %s at %s naming %s; got %+v", code, p, text, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d (a layout-only change to a test block or jest key is none): %+v", len(got), len(want), got)
	}
}

func TestTargetsRunnerConfig(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"test/a.test.js": "", "test/b.test.ts": "", "src/x.js": ""})
	for _, changed := range []string{"vitest.config.ts", "jest.config.cjs", "vite.config.mjs", "babel.config.js", "pkg/.babelrc"} {
		got, err := New().Targets(t.Context(), nil, dir, &verify.Change{Files: []verify.FileChange{{Path: changed, Status: verify.Modified}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Errorf("%s changed: Targets = %q, want every test file", changed, got)
		}
	}
}

// A repository with node:test tests at its root and a vitest workspace
// package whose node_modules is hoisted to the root: each file runs with
// its own project's runner, a timed-out vitest test is a Timeout, and
// test.each rows are tests by their expanded names.
func TestRunTestsPerProject(t *testing.T) {
	a := linkedAdapter{Adapter: New(), modules: npmFixture(t, "vitest")}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json":              `{"name": "root", "private": true}`,
		"test/plain.test.js":        "const { test } = require('node:test');\ntest('plain', () => {});\n",
		"packages/app/package.json": fixturePackageJSON(t, "vitest"),
		"packages/app/src/sum.test.ts": `import { expect, test } from 'vitest';

test.each([[1, 1, 2], [2, 2, 5]])('sum %i+%i=%i', (a: number, b: number, want: number) => {
  expect(a + b).toBe(want);
});

test('slow', async () => {
  await new Promise((resolve) => setTimeout(resolve, 600000));
});

test.skipIf(true)('skipped on purpose', () => {});
`,
	})
	tc := func(file, name string) verify.Test {
		return verify.Test{Language: language, Package: file, File: file, Name: name}
	}
	tests := []verify.Test{
		tc("test/plain.test.js", "plain"),
		tc("packages/app/src/sum.test.ts", "sum 1+1=2"),
		tc("packages/app/src/sum.test.ts", "sum 2+2=5"),
		tc("packages/app/src/sum.test.ts", "slow"),
		tc("packages/app/src/sum.test.ts", "skipped on purpose"),
		tc("packages/app/src/sum.test.ts", "absent"),
	}
	res, err := a.RunTests(t.Context(), host.New(), dir, tests, verify.RunOptions{Count: 1, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []verify.Outcome{verify.Pass, verify.Pass, verify.Fail, verify.Timeout, verify.Skip, verify.NotRun}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s (%q), want %s", tests[i].Name, r.Outcome, r.Detail, want[i])
		}
	}
	suite, err := a.RunSuite(t.Context(), host.New(), dir, []string{"test/plain.test.js", "packages/app/src/sum.test.ts"}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]verify.Outcome{}
	for _, r := range suite.Results {
		got[r.Test.File+":"+r.Test.Name] = r.Outcome
	}
	if suite.Outcome != verify.Fail || got["test/plain.test.js:plain"] != verify.Pass || got["packages/app/src/sum.test.ts:sum 2+2=5"] != verify.Fail ||
		got["packages/app/src/sum.test.ts:slow"] != verify.Timeout {
		t.Errorf("RunSuite: %s (%q), results %v", suite.Outcome, suite.Detail, got)
	}
}

// TypeScript under jest runs as the project configures it: here ts-jest,
// named by the project's jest.config.js.
func TestRunTestsJestTypeScript(t *testing.T) {
	a := linkedAdapter{Adapter: New(), modules: npmFixture(t, "jest")}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json":   fixturePackageJSON(t, "jest"),
		"jest.config.js": "module.exports = { preset: 'ts-jest', testEnvironment: 'node' };\n",
		"src/calc.ts":    "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
		"test/calc.test.ts": `import { describe, expect, it } from '@jest/globals';
import { add } from '../src/calc';

describe('calc', () => {
  it.each([[1, 1, 2], [2, 2, 5]])('%i+%i=%i', (a: number, b: number, want: number) => {
    expect(add(a, b)).toBe(want);
  });
});
`,
	})
	tests := []verify.Test{
		{Language: language, Package: "test/calc.test.ts", File: "test/calc.test.ts", Name: "calc › 1+1=2"},
		{Language: language, Package: "test/calc.test.ts", File: "test/calc.test.ts", Name: "calc › 2+2=5"},
	}
	res, err := a.RunTests(t.Context(), host.New(), dir, tests, verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []verify.Outcome{verify.Pass, verify.Fail} {
		if res[i].Outcome != want {
			t.Errorf("%s: %s (%q), want %s", tests[i].Name, res[i].Outcome, res[i].Detail, want)
		}
	}
	// The static side agrees with the runner on the rows' names.
	got, err := New().ChangedTests(t.Context(), change(map[string][2]string{"test/calc.test.ts": {"", readFile(t, dir, "test/calc.test.ts")}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != tests[0].Name || got[1].Name != tests[1].Name {
		t.Errorf("ChangedTests = %+v, want the two rows", got)
	}
}

// node --test runs TypeScript test files with --import tsx when the
// project depends on tsx.
func TestRunTestsNodeTSX(t *testing.T) {
	a := linkedAdapter{Adapter: New(), modules: npmFixture(t, "vitest")} // it holds tsx too
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json": `{"private": true, "devDependencies": {"tsx": "4.19.2"}}`,
		"test/calc.test.ts": `import { test } from 'node:test';
import assert from 'node:assert';

interface Pair { a: number; b: number }

test('typed', () => {
  const p: Pair = { a: 1, b: 2 };
  assert.strictEqual(p.a + p.b, 3);
});
`,
	})
	tests := []verify.Test{{Language: language, Package: "test/calc.test.ts", File: "test/calc.test.ts", Name: "typed"}}
	res, err := a.RunTests(t.Context(), host.New(), dir, tests, verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != verify.Pass {
		t.Errorf("typed: %s (%q), want pass", res[0].Outcome, res[0].Detail)
	}
	suite, err := a.RunSuite(t.Context(), host.New(), dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if suite.Outcome != verify.Pass || len(suite.Results) != 1 {
		t.Errorf("RunSuite: %s (%q), %d results, want pass with 1", suite.Outcome, suite.Detail, len(suite.Results))
	}
}

func TestRunnerArgs(t *testing.T) {
	a := New()
	scratch := t.TempDir()
	args, err := a.runnerArgs(scratch, "/r/node_modules/jest/bin/jest.js", project{Root: ".", Runner: Jest, VMModules: true}, "^(?:x)$", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"node --experimental-vm-modules /r/node_modules/jest/bin/jest.js --ci --reporters=", "--testNamePattern=^(?:x)$", "--testTimeout=2000", "--runTestsByPath"} {
		if !strings.Contains(got, want) {
			t.Errorf("jest args %q lack %q", got, want)
		}
	}
	args, err = a.runnerArgs(scratch, "/r/node_modules/vitest/vitest.mjs", project{Root: ".", Runner: Vitest}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(args, " ")
	if !strings.HasPrefix(got, "node /r/node_modules/vitest/vitest.mjs run --reporter=") || !strings.Contains(got, "--cache=false") || strings.Contains(got, "Timeout") || strings.Contains(got, "Pattern") {
		t.Errorf("vitest args %q", got)
	}
}

// A snapshot reached through a symbolic link: vitest names files by their
// real paths, which are still read as the snapshot's.
func TestRunTestsThroughSymlink(t *testing.T) {
	a := linkedAdapter{Adapter: New(), modules: npmFixture(t, "vitest")}
	real := t.TempDir()
	writeFiles(t, real, map[string]string{
		"package.json":      fixturePackageJSON(t, "vitest"),
		"src/a.test.ts":     "import { test } from 'vitest';\ntest('a', () => {});\n",
		"lib/src/a.test.ts": "import { test } from 'vitest';\ntest('a', () => { throw new Error('not asked for'); });\n",
	})
	dir := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, dir); err != nil {
		t.Fatal(err)
	}
	suite, err := a.RunSuite(t.Context(), host.New(), dir, []string{"src/a.test.ts"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if suite.Outcome != verify.Pass || len(suite.Results) != 1 || suite.Results[0].Test.File != "src/a.test.ts" {
		t.Errorf("RunSuite: %s (%q), results %+v, want one pass in src/a.test.ts", suite.Outcome, suite.Detail, suite.Results)
	}
}

// An error thrown outside every test fails a vitest suite whose tests all
// passed.
func TestRunSuiteVitestUnhandledError(t *testing.T) {
	a := linkedAdapter{Adapter: New(), modules: npmFixture(t, "vitest")}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json": fixturePackageJSON(t, "vitest"),
		"a.test.ts":    "import { test } from 'vitest';\ntest('a', () => {\n  setTimeout(() => { throw new Error('late boom'); }, 0);\n});\ntest('b', async () => {\n  await new Promise((r) => setTimeout(r, 50));\n});\n",
	})
	suite, err := a.RunSuite(t.Context(), host.New(), dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if suite.Outcome != verify.Fail || !strings.Contains(suite.Detail, "late boom") {
		t.Errorf("RunSuite: %s (%q) failed %v, want a failure naming the unhandled error", suite.Outcome, suite.Detail, suite.Failed)
	}
}

func TestIsTestSupportRunnerFiles(t *testing.T) {
	a := New()
	for p, want := range map[string]bool{
		"jest.setup.js": true, "vitest.setup.ts": true, "jest.config.js": true, "vitest.config.mts": true,
		"src/setupTests.ts": true, "src/__tests__/helpers.ts": true, "src/jester.js": false, "vite.config.ts": false,
	} {
		if got := a.IsTestSupport(p); got != want {
			t.Errorf("IsTestSupport(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestRunsTypeScript(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"plain/package.json": `{"name": "plain", "scripts": {"test": "node --test"}}`,
		"tsx/package.json":   `{"name": "tsx", "scripts": {"test": "node --import tsx --test"}, "devDependencies": {"tsx": "4.19.2"}}`,
		"vite/package.json":  `{"name": "vite", "devDependencies": {"vitest": "3.2.4"}}`,
		"jest/package.json":  `{"name": "jest", "jest": {"preset": "ts-jest"}}`,
	})
	a := New()
	for file, want := range map[string]bool{
		"plain/src/a.ts": false, "tsx/src/a.ts": true, "vite/src/a.test.ts": true, "jest/a.ts": true, "elsewhere/a.ts": false,
	} {
		if got, runner := a.RunsTypeScript(dir, file); got != want {
			t.Errorf("%s: RunsTypeScript %v (%s), want %v", file, got, runner, want)
		}
	}
}
