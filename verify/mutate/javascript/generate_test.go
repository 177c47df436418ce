package javascript

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// TestSites checks the mutants of each kind, their texts and where they
// are, and what is left alone: unchanged lines, unary minus, string
// concatenation (line 4), a regular expression's slash, comments and strings.
func TestSites(t *testing.T) {
	src := `const re = /a+b/g; // a < b in a comment
function f(a, xs) {
  if (a.length >= 2 && xs[a.length - 1] === -1) return true;
  const s = "x" + a + "<";
  return a * 2 / 3 - 1 || a + 1 < 4;
}
function g(n) { return n != 0 ? false : n == 1; }
`
	got, notes, err := sites("f.js", []byte(src), []verify.LineRange{{Start: 1, End: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) > 0 {
		t.Errorf("notes: %q", notes)
	}
	lines := lineStarts([]byte(src))
	var have []string
	for _, s := range got {
		line, col := position(lines, s.start)
		if src[s.start:s.end] != s.original {
			t.Errorf("%s at %d:%d: the range holds %q", s.original, line, col, src[s.start:s.end])
		}
		have = append(have, fmt.Sprintf("%d:%d %s %s %s→%s", line, col, s.fn, s.op, s.original, s.mutated))
	}
	want := []string{
		"3:16 f conditional_boundary >=→>",
		"3:16 f relational_negation >=→<",
		"3:19 f constant_bound 2→3",
		"3:19 f constant_bound 2→1",
		"3:21 f logical_operator &&→||",
		"3:36 f arith_index -→+",
		"3:38 f constant_bound 1→2",
		"3:38 f constant_bound 1→0",
		"3:41 f relational_negation ===→!==",
		"3:56 f bool_literal true→false",
		"5:12 f arith_operator *→/",
		"5:16 f arith_operator /→*",
		"5:20 f arith_operator -→+",
		"5:24 f logical_operator ||→&&",
		"5:29 f arith_operator +→-",
		"5:31 f constant_bound 1→2",
		"5:31 f constant_bound 1→0",
		"5:33 f conditional_boundary <→<=",
		"5:33 f relational_negation <→>=",
		"5:35 f constant_bound 4→5",
		"5:35 f constant_bound 4→3",
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("mutants:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

func TestMutable(t *testing.T) {
	e := New()
	for p, want := range map[string]bool{
		"calc.js": true, "lib/a.mjs": true, "lib/a.cjs": true,
		"calc.ts": true, "lib/a.mts": true, "a.tsx": false, "a.jsx": false, "test/calc.js": false, "calc.test.js": false, "calc.test.ts": false,
		"node_modules/x/index.js": false, "main.go": false,
	} {
		if got := e.Mutable(p); got != want {
			t.Errorf("Mutable(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestSitesDistrust checks that an operator whose tokens the syntax tree
// does not confirm is not mutated: the minus after a block is unary.
func TestSitesDistrust(t *testing.T) {
	src := "if (x) {}\n-1 < y;\n"
	got, notes, err := sites("f.js", []byte(src), []verify.LineRange{{Start: 1, End: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if s.original == "-" {
			t.Errorf("the unary minus was mutated: %+v", s)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "-") {
		t.Errorf("notes: %q, want one naming -", notes)
	}
}

// TestTypeScriptSites: a TypeScript file's comparisons are mutated, the
// angle brackets of its type arguments and parameters and its
// annotations' literal types are not; a conditional's else branch and an
// object literal's values are code.
func TestTypeScriptSites(t *testing.T) {
	src := `export function clamp<T extends number>(x: T, lo: number, hi: 1 | 2 = 1): Array<Map<string, number>> {
  const m = new Map<string, Array<number>>();
  const o = { big: x > 100, small: x < lo };
  return x >= hi ? [m] : x <= lo ? [] : [new Map<string, number>()];
}
`
	got, notes, err := sites("f.ts", []byte(src), []verify.LineRange{{Start: 1, End: 5}})
	if err != nil || len(notes) > 0 {
		t.Fatalf("sites: %v %q", err, notes)
	}
	lines := lineStarts([]byte(src))
	var have []string
	for _, s := range got {
		if s.op != "conditional_boundary" && s.op != "constant_bound" {
			continue
		}
		line, col := position(lines, s.start)
		have = append(have, fmt.Sprintf("%d:%d %s→%s", line, col, s.original, s.mutated))
	}
	want := []string{"3:22 >→>=", "3:24 100→101", "3:24 100→99", "3:38 <→<=", "4:12 >=→>", "4:28 <=→<"}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("TypeScript sites:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}
