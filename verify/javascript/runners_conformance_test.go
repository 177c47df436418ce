package javascript

import (
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/adaptertest"
)

// TestConformanceVitest runs the conformance suite with vitest (pinned in
// testdata/vitest) on TypeScript test files.
func TestConformanceVitest(t *testing.T) {
	t.Parallel()
	modules := npmFixture(t, "vitest")
	pkg := fixturePackageJSON(t, "vitest")
	adaptertest.Run(t, adaptertest.Language{
		Adapter:  linkedAdapter{Adapter: New(), modules: modules},
		Runner:   host.New(),
		Require:  needNode,
		Foreign:  "cmd/main.go",
		Outcomes: runnerOutcomes(pkg, "ts", vitestOutcomesTest, "to be 5"),
		Change:   convertChange(jsChange, pkg, toVitestTS),
		Suite: adaptertest.Suite{
			Passing: toVitestTS(map[string]string{"package.json": pkg, "calc.js": calcJS, "test/calc.test.js": jsPassingTest}),
			Failing: toVitestTS(map[string]string{"package.json": pkg, "calc.js": calcJS, "test/calc.test.js": jsFailingTest}),
		},
	})
}

// TestConformanceJest runs the conformance suite with jest (pinned in
// testdata/jest) on CommonJS test files.
func TestConformanceJest(t *testing.T) {
	t.Parallel()
	modules := npmFixture(t, "jest")
	pkg := fixturePackageJSON(t, "jest")
	adaptertest.Run(t, adaptertest.Language{
		Adapter:  linkedAdapter{Adapter: New(), modules: modules},
		Runner:   host.New(),
		Require:  needNode,
		Foreign:  "cmd/main.go",
		Outcomes: runnerOutcomes(pkg, "js", jestOutcomesTest, "Expected: 5"),
		Change:   convertChange(jsChange, pkg, toJest),
		Suite: adaptertest.Suite{
			Passing: toJest(map[string]string{"package.json": pkg, "calc.js": calcJS, "test/calc.test.js": jsPassingTest}),
			Failing: toJest(map[string]string{"package.json": pkg, "calc.js": calcJS, "test/calc.test.js": jsFailingTest}),
		},
	})
}

var (
	nodeTestImport = regexp.MustCompile(`(?m)^const \{ ([\w, ]+) \} = require\('node:test'\);\n`)
	cjsRequire     = regexp.MustCompile(`(?m)^const (\{ [\w, ]+ \}|\w+) = require\('([^']+?)(\.js)?'\);$`)
	cjsExports     = regexp.MustCompile(`(?m)^module\.exports = \{ ([\w, ]+) \};$`)
)

// toJest turns node:test fixtures into jest's: its globals stand for
// node:test's imports.
func toJest(files map[string]string) map[string]string {
	out := map[string]string{}
	for p, s := range files {
		out[p] = nodeTestImport.ReplaceAllString(s, "")
	}
	return out
}

// toVitestTS turns node:test fixtures into TypeScript modules for vitest.
func toVitestTS(files map[string]string) map[string]string {
	out := map[string]string{}
	for p, s := range files {
		if strings.HasSuffix(p, ".js") {
			s = nodeTestImport.ReplaceAllString(s, "import { $1 } from 'vitest';\n")
			s = cjsRequire.ReplaceAllStringFunc(s, func(m string) string {
				g := cjsRequire.FindStringSubmatch(m)
				if strings.HasPrefix(g[1], "{") {
					return "import " + g[1] + " from '" + g[2] + "';"
				}
				return "import " + g[1] + " from '" + g[2] + "';"
			})
			s = cjsExports.ReplaceAllString(s, "export { $1 };")
			p = strings.TrimSuffix(p, ".js") + ".ts"
		}
		out[p] = s
	}
	return out
}

// convertChange is the node:test Change fixture for another runner.
func convertChange(c adaptertest.Change, pkg string, conv func(map[string]string) map[string]string) adaptertest.Change {
	base := maps.Clone(c.Base)
	base["package.json"] = pkg
	c.Base, c.Head = conv(base), conv(c.Head)
	ext := func(p string) string {
		if _, ok := c.Base[p]; ok {
			return p
		}
		if _, ok := c.Head[p]; ok {
			return p
		}
		return strings.TrimSuffix(p, ".js") + ".ts"
	}
	for _, t := range []*verify.Test{&c.Added, &c.Modified, &c.Moved, &c.Unchanged, &c.Deleted, &c.Skipped} {
		t.File = ext(t.File)
		t.Package = t.File
	}
	var untouched []string
	for _, p := range c.Untouched {
		untouched = append(untouched, ext(p))
	}
	c.Untouched = untouched
	c.Source, c.Target, c.Support, c.Unit = ext(c.Source), ext(c.Target), ext(c.Support), ext(c.Unit)
	return c
}

// runnerOutcomes is the Outcomes fixture for vitest or jest: test files
// with extension ext whose calc test file is calcTest, where an assertion
// fails saying failText.
func runnerOutcomes(pkg, ext, calcTest, failText string) adaptertest.Outcomes {
	f := func(p string) string { return "test/" + p + ".test." + ext }
	tc := func(p, name string) verify.Test { return conformanceTest(f(p), name) }
	imp := ""
	if ext == "ts" {
		imp = "import { test } from 'vitest';\n"
	}
	return adaptertest.Outcomes{
		Files: map[string]string{
			"package.json": pkg,
			"calc.js":      "function add(a, b) {\n  return a + b;\n}\n\nfunction parse(s) {\n  throw new Error('cannot parse ' + s);\n}\n\nmodule.exports = { add, parse };\n",
			f("calc"):      calcTest,
			f("broken"):    imp + "const { neu } = require('../missing.js');\n\ntest('new', () => {\n  neu();\n});\n",
			f("slow"):      imp + "test('slow', async () => {\n  await new Promise((resolve) => setTimeout(resolve, 600000));\n});\n",
		},
		Pass:          tc("calc", "calc › passes"),
		Fail:          tc("calc", "calc › asserts"),
		FailText:      failText,
		Panic:         tc("calc", "calc › raises"),
		PanicText:     "cannot parse x",
		Skip:          tc("calc", "calc › skips"),
		Param:         tc("calc", "table"),
		ParamPass:     tc("calc", "table › 1+1=2"),
		ParamFail:     tc("calc", "table › 1+1=3"),
		Missing:       tc("calc", "calc › missing"),
		Broken:        tc("broken", "new"),
		BrokenOutcome: verify.ImportError,
		BrokenText:    "missing.js",
		Slow:          tc("slow", "slow"),
		Unit:          f("calc"),
	}
}

// The calc test files: every way a test ends, and a test.each table whose
// rows are tests by their expanded names.
const (
	vitestOutcomesTest = `import { describe, expect, it, test } from 'vitest';
import { add, parse } from '../calc.js';

describe('calc', () => {
  it('passes', () => {
    expect(add(1, 2) as number).toBe(3);
  });

  it('asserts', () => {
    expect(add(2, 2)).toBe(5);
  });

  it('raises', () => {
    parse('x');
  });

  it('skips', (ctx) => {
    ctx.skip();
  });
});

describe('table', () => {
  test.each([[1, 1, 2], [1, 1, 3]])('%i+%i=%i', (a: number, b: number, want: number) => {
    expect(add(a, b)).toBe(want);
  });
});
`
	jestOutcomesTest = `const { add, parse } = require('../calc.js');

describe('calc', () => {
  it('passes', () => {
    expect(add(1, 2)).toBe(3);
  });

  it('asserts', () => {
    expect(add(2, 2)).toBe(5);
  });

  it('raises', () => {
    parse('x');
  });

  it.skip('skips', () => {});
});

describe('table', () => {
  test.each([[1, 1, 2], [1, 1, 3]])('%i+%i=%i', (a, b, want) => {
    expect(add(a, b)).toBe(want);
  });
});
`
)
