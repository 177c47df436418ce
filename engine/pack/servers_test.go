package pack

import (
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/internal/testenv"
)

// tsRepo is a TypeScript project: cart.ts's add is called by api.ts and
// reached by one test of cart.test.ts; normalize is its callee.
const tsRepo = `
-- package.json --
{"name": "shop", "version": "1.0.0", "type": "module"}
-- tsconfig.json --
{"compilerOptions": {"strict": true, "module": "esnext", "target": "es2022"}, "include": ["src", "test"]}
-- src/cart.ts --
export function normalize(key: string): string {
  return "k:" + key;
}

export function add(cart: Map<string, number>, key: string): Map<string, number> {
  cart.set(normalize(key), (cart.get(normalize(key)) ?? 0) + 1);
  return cart;
}
-- src/api.ts --
import { add } from "./cart";

export function handle(key: string): number {
  return add(new Map(), key).size;
}
-- test/cart.test.ts --
import { add, normalize } from "../src/cart";

export function testAdd(): void {
  if (add(new Map(), "a").size !== 1) throw new Error("add");
}

export function testNormalize(): void {
  if (normalize("a") !== "k:a") throw new Error("normalize");
}
`

// TestTypeScriptThroughItsServer: a selection in TypeScript gets its
// callers and callees and the tests that reach it from
// typescript-language-server, as Python's does from pyright.
func TestTypeScriptThroughItsServer(t *testing.T) {
	testenv.Command(t, "typescript-language-server", "install it with `npm i -g typescript-language-server typescript`")
	repo := writeRepo(t, tsRepo)
	p := build(t, Input{Repo: repo, Selection: &engine.Selection{File: "src/cart.ts", StartLine: 6, EndLine: 6}})
	out := Render(p)
	if !strings.Contains(out, "JavaScript/TypeScript through the language server typescript-language-server") {
		t.Fatalf("no note of the server:\n%s", out)
	}
	c := section(p, "Callers and callees")
	if c == nil || !strings.Contains(c.Text, "src/api.ts:3-5 (caller handle)") || !strings.Contains(c.Text, "(callee normalize)") {
		t.Fatalf("call hierarchy missing:\n%s", out)
	}
	ts := section(p, "Tests that reach")
	if ts == nil || !strings.Contains(ts.Text, "export function testAdd(): void {") || strings.Contains(ts.Text, "testNormalize") {
		t.Fatalf("tests section wrong:\n%s", out)
	}
}

// TestServerLanguageWithoutServerFallsBack: a Rust or JavaScript
// selection whose server is not installed gets text search, and the pack
// says which server to install.
func TestServerLanguageWithoutServerFallsBack(t *testing.T) {
	for _, c := range []struct{ file, archive, note string }{
		{"src/lib.rs", "-- Cargo.toml --\n[package]\nname = \"x\"\nversion = \"0.1.0\"\n-- src/lib.rs --\npub fn add(a: i32) -> i32 {\n    a + 1\n}\n", "Rust language server unavailable"},
		{"calc.js", "-- calc.js --\nexports.add = function add(a) {\n  return a + 1;\n};\n", "JavaScript/TypeScript language server unavailable"},
	} {
		repo := writeRepo(t, c.archive)
		p := build(t, Input{Repo: repo, LanguageServers: [][]string{{"no-such-language-server-bcode"}},
			Selection: &engine.Selection{File: c.file, StartLine: 2, EndLine: 2}})
		out := Render(p)
		if !strings.Contains(out, c.note) || !strings.Contains(out, "install one with") || !strings.Contains(out, "text search") {
			t.Errorf("%s: no fallback note:\n%s", c.file, out)
		}
	}
}
