package javascript

import (
	"errors"
	"testing"
)

func TestIsTestFile(t *testing.T) {
	a := New()
	for p, want := range map[string]bool{
		"calc.test.js": true, "src/calc.test.mjs": true, "calc-test.cjs": true, "calc_test.js": true,
		"test-calc.js": true, "test.js": true, "test/helpers.js": true, "a/test/b/c.mjs": true,
		"calc.test.ts": true, "test/x.mts": true, "calc_test.cts": true,
		"calc.spec.js": true, "calc.test.jsx": true, "calc.test.tsx": true, "view.spec.tsx": true,
		"src/__tests__/calc.ts": true, "src/__tests__/view.tsx": true,
		"calc.js": false, "tests/helpers.js": false, "view-test.jsx": false, "test/view.tsx": false,
		"node_modules/x/test/a.js": false, "node_modules/x/a.spec.js": false, "test/data.json": false, "contest.js": false,
		"testing.js": false, "latest.js": false, "spec.js": false, "inspect.js": false,
	} {
		if got := a.IsTestFile(p); got != want {
			t.Errorf("IsTestFile(%q) = %v, want %v", p, got, want)
		}
	}
	for p, want := range map[string]bool{"a.jsx": true, "a.tsx": true, "a.d.ts": true, "a.py": false, "node_modules/a.js": false} {
		if got := a.Owns(p); got != want {
			t.Errorf("Owns(%q) = %v, want %v", p, got, want)
		}
	}
}

func names(ts []staticTest) map[string]staticTest {
	out := map[string]staticTest{}
	for _, t := range ts {
		out[t.Name] = t
	}
	return out
}

func TestStaticTests(t *testing.T) {
	src := `import { describe, it, test } from 'node:test';

describe('outer', () => {
  it('plain', () => {});
  it.skip('skipped', () => {});
  it.todo('todo');
  it('by option', { skip: 'later' }, () => {});
  it('not by option', { skip: false }, () => {});
  describe.skip('off', () => {
    it('inside', () => {});
  });
});

test.only('focused', async (t) => {
  await t.test('sub', () => {});
});
test(` + "`template`" + `, function () {});
test(` + "`dynamic ${1}`" + `, () => {});
test(name, () => {});
helper.test('not a test', () => {});
`
	got, err := staticTests("a.test.mjs", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	byName := names(got)
	for name, want := range map[string]staticTest{
		"outer":                 {Suite: true},
		"outer › plain":         {},
		"outer › skipped":       {Skipped: true},
		"outer › todo":          {Skipped: true},
		"outer › by option":     {Skipped: true},
		"outer › not by option": {},
		"outer › off":           {Suite: true, Skipped: true},
		"outer › off › inside":  {Skipped: true},
		"focused":               {Only: true},
		"focused › sub":         {},
		"template":              {},
	} {
		g, ok := byName[name]
		if !ok {
			t.Errorf("%q not found among %v", name, got)
			continue
		}
		if g.Suite != want.Suite || g.Skipped != want.Skipped || g.Only != want.Only {
			t.Errorf("%q: suite %v skipped %v only %v, want %v %v %v", name, g.Suite, g.Skipped, g.Only, want.Suite, want.Skipped, want.Only)
		}
	}
	if len(byName) != 11 {
		t.Errorf("%d tests, want 11 (no dynamic names, no helper.test): %v", len(byName), got)
	}
}

func TestStaticTestsTypeScript(t *testing.T) {
	src := `import { test } from 'node:test';
import type { Calc } from './calc';

interface Pair { a: number; b: number }

test('typed', (t: unknown) => {
  const p: Pair = { a: 1, b: 2 };
  const c = {} as Calc;
  return p.a + p.b;
});
`
	got, err := staticTests("calc.test.ts", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "typed" {
		t.Fatalf("got %+v, want the one test typed", got)
	}
	// Types are not behaviour: a change to an annotation alone is no change.
	other, err := staticTests("calc.test.ts", []byte(`import { test } from 'node:test';
test('typed', (t: string) => {
  const p: { a: number; b: number } = { a: 1, b: 2 };
  const c = {} as unknown;
  return p.a + p.b;
});
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(other) != 1 || other[0].Body != got[0].Body {
		t.Errorf("bodies differ by types only:\n%s\n%s", got[0].Body, other[0].Body)
	}
	if _, err := staticTests("bad.test.ts", []byte("test('x', () => {")); !errors.Is(err, ErrSyntax) {
		t.Errorf("unclosed call: %v, want ErrSyntax", err)
	}
	jsx, err := staticTests("view.test.tsx", []byte("import { test } from 'node:test';\ntest('renders', () => <div a={1}>hi</div>);\n"))
	if err != nil || len(jsx) != 1 {
		t.Errorf("tsx: %v, %+v", err, jsx)
	}
}

func TestStaticTestsBodyIgnoresLayout(t *testing.T) {
	a, err := staticTests("a.test.js", []byte("test('x', () => {\n  // why\n  f(1,2);\n});\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := staticTests("a.test.js", []byte("\n\ntest('x', () => { f(1, 2) })\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a[0].Body != b[0].Body {
		t.Errorf("layout and comments changed the body:\n%s\n%s", a[0].Body, b[0].Body)
	}
	c, _ := staticTests("a.test.js", []byte("test('x', () => { f(2, 1) })\n"))
	if c[0].Body == a[0].Body {
		t.Errorf("different arguments, same body %s", c[0].Body)
	}
}
