package javascript

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	jsadapter "github.com/bcode-dev/bcode/verify/javascript"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// tsxCheckout is a directory whose node_modules are the vitest fixture's
// packages (verify/javascript/testdata/vitest, which holds tsx), installed
// once per lock by the production installer into the test cache, and a
// package.json naming tsx alone: node --test runs the TypeScript through
// tsx, one process per test file, as it runs JavaScript.
func tsxCheckout(t *testing.T) (string, string) {
	t.Helper()
	testenv.Node(t)
	testenv.Command(t, "npm", "install npm (Debian: apt-get install npm)")
	src := filepath.Join("..", "..", "javascript", "testdata", "vitest")
	manifest, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	p := &jsadapter.Packages{Dir: filepath.Join(cache, "bcode-test", "packages"), Runner: host.New()}
	mods, err := p.Install(context.Background(), []jsadapter.LockedProject{{Dir: ".", Manifest: manifest, Lock: lock}})
	if err != nil {
		testenv.Missing(t, "npm ci of the vitest fixture: "+err.Error())
	}
	checkout := t.TempDir()
	if err := os.Symlink(mods["."], filepath.Join(checkout, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return checkout, `{"name": "calc", "private": true, "devDependencies": {"tsx": "4.19.2"}}` + "\n"
}

// TestConformanceTypeScript runs the suite on TypeScript code and tests
// under node --test with tsx: the conformance fixture's calc, typed.
func TestConformanceTypeScript(t *testing.T) {
	checkout, manifest := tsxCheckout(t)
	f := mutatetest.Fixture{
		Base: "-- package.json --\n" + manifest + `
-- calc.ts --
export function old(n: number): boolean {
  return n > 3;
}
-- test/calc.test.ts --
import { describe, it } from 'node:test';
import assert from 'node:assert';
import { old } from '../calc.ts';

describe('calc', () => {
  it('old', () => {
    assert.ok(old(4) && !old(3));
  });
});
`,
		Head: `
-- calc.ts --
export function old(n: number): boolean {
  return n > 3;
}

export function halve(x: number): number {
  let n: number = 0;
  while (x > 0) { // loop
    x = Math.floor(x / 2);
    n++;
  }
  return n;
}

export function small(n: number): boolean {
  return n < 10; // survivor
}

export function big(n: number): boolean {
  return n > 100; // killed
}

export function guard(n: number): number {
  if (n < 0) { // crash
    process.exit(1);
  }
  return n;
}

export function firsts(xs: Array<Array<number>>): Map<string, number> {
  return new Map<string, number>(xs.map((x) => [String(x[0]), x.length]));
}
-- test/calc.test.ts --
import { describe, it } from 'node:test';
import assert from 'node:assert';
import { big, guard, halve, old, small } from '../calc.ts';

describe('calc', () => {
  it('old', () => {
    assert.ok(old(4) && !old(3));
  });
  it('halve', () => {
    assert.strictEqual(halve(8), 4);
  });
  it('small', () => {
    assert.ok(small(3) && !small(20));
  });
  it('big boundary', () => {
    assert.ok(!big(100) && big(101));
  });
  it('guard', () => {
    assert.strictEqual(guard(5), 5);
  });
});
`,
		Options:   mutate.Options{Checkout: checkout},
		Unchanged: mutatetest.Site{File: "calc.ts", Line: "return n > 3;"},
		Survivor:  mutatetest.Site{File: "calc.ts", Line: "// survivor", Mutated: "<="},
		Covering:  []string{"test/calc.test.ts::calc › small"},
		Killed:    mutatetest.Site{File: "calc.ts", Line: "// killed", Mutated: ">="},
		Killer:    verify.Test{Language: "javascript", Package: "test/calc.test.ts", File: "test/calc.test.ts", Name: "calc › big boundary"},
		Loop:      mutatetest.Site{File: "calc.ts", Line: "// loop", Mutated: ">="},
		Crash:     mutatetest.Site{File: "calc.ts", Line: "// crash", Mutated: ">="},
	}
	mutatetest.Run(t, New(), f)
}
