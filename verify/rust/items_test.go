package rust

import (
	"slices"
	"strings"
	"testing"
)

func TestLexSkipsCommentsAndReadsLiterals(t *testing.T) {
	src := "/* outer /* nested */ still */ fn f<'a>(x: &'a str) -> char {\n" +
		"    let _ = r#\"a \" } fn g() { \"#; // } line\n" +
		"    let _ = b'}'; let _ = '\\''; let _ = \"}\\\"\";\n" +
		"    'x'\n}\n"
	var kinds []string
	for _, tok := range lex([]byte(src)) {
		switch tok.kind {
		case tokLifetime:
			kinds = append(kinds, "L:"+tok.text)
		case tokLiteral:
			kinds = append(kinds, "S:"+tok.text)
		}
	}
	want := []string{"L:'a", "L:'a", `S:r#"a " } fn g() { "#`, "S:b'}'", `S:'\''`, `S:"}\""`, "S:'x'"}
	if !slices.Equal(kinds, want) {
		t.Errorf("literals and lifetimes = %q, want %q", kinds, want)
	}
	if n := len(testFns([]byte(src))); n != 0 {
		t.Errorf("%d tests in a file with none", n)
	}
}

func TestTestFnsModulesAndAttributes(t *testing.T) {
	src := `
pub fn code() {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A doc comment { with a brace.
    #[test]
    fn plain() { let s = "fn fake() {}"; }

    mod inner {
        #[tokio::test]
        async fn awaits() {}

        #[test]
        #[should_panic(expected = "boom")]
        fn panics() { panic!("boom") }
    }

    #[cfg(feature = "slow")]
    mod gated {
        #[test]
        #[ignore]
        fn slow() {}
    }

    impl S {
        #[test]
        fn not_a_test_in_an_impl() {}
    }

    fn helper() {
        #[test]
        fn nested_is_not_collected() {}
    }
}
`
	got := map[string]testFn{}
	var names []string
	for _, fn := range testFns([]byte(src)) {
		got[fn.Name] = fn
		names = append(names, fn.Name)
	}
	want := []string{"tests::plain", "tests::inner::awaits", "tests::inner::panics", "tests::gated::slow"}
	if !slices.Equal(names, want) {
		t.Fatalf("tests = %q, want %q", names, want)
	}
	if g := got["tests::gated::slow"].Gates; len(g) != 1 || !strings.Contains(g[0], "feature") {
		t.Errorf("gates of the gated test = %q, want the feature cfg", g)
	}
	if g := got["tests::plain"].Gates; len(g) != 0 {
		t.Errorf("cfg(test) counted as a gate: %q", g)
	}
	if a, ok := attrNamed(got["tests::inner::panics"].Attrs, "should_panic"); !ok || !strings.Contains(a, "expected") {
		t.Errorf("should_panic attribute = %q, %v", a, ok)
	}
	if got["tests::plain"].Line != 10 {
		t.Errorf("plain at line %d, want 10", got["tests::plain"].Line)
	}
}

func TestTestFnsInnerCfgGatesTheFile(t *testing.T) {
	fns := testFns([]byte("#![cfg(any())]\n\n#[test]\nfn gone() {}\n"))
	if len(fns) != 1 || len(fns[0].Gates) != 1 || fns[0].Gates[0] != "cfg ( any ( ) )" {
		t.Errorf("tests = %+v, want gone gated by cfg(any())", fns)
	}
}

func TestUnitOf(t *testing.T) {
	lib := func(string) bool { return true }
	noLib := func(string) bool { return false }
	for _, c := range []struct {
		path   string
		hasLib func(string) bool
		unit   string
		module string
	}{
		{"src/lib.rs", lib, "src/lib.rs", ""},
		{"src/parse/mod.rs", lib, "src/lib.rs", "parse"},
		{"calc/src/a/b.rs", lib, "calc/src/lib.rs", "a::b"},
		{"src/util.rs", noLib, "src/main.rs", "util"},
		{"src/bin/tool.rs", lib, "src/bin/tool.rs", ""},
		{"tests/api.rs", lib, "tests/api.rs", ""},
		{"crates/x/tests/big/main.rs", lib, "crates/x/tests/big/main.rs", ""},
		{"crates/x/tests/big/cases.rs", lib, "crates/x/tests/big/main.rs", "cases"},
	} {
		unit, module, ok := unitOf(c.path, c.hasLib)
		if !ok || unit != c.unit || strings.Join(module, "::") != c.module {
			t.Errorf("unitOf(%s) = %s, %q, %v; want %s, %q", c.path, unit, module, ok, c.unit, c.module)
		}
		if _, _, ok := splitUnit(unit); !ok {
			t.Errorf("splitUnit(%s) does not know the unit unitOf gave", unit)
		}
	}
	a := New()
	for p, want := range map[string][2]bool{
		"src/lib.rs":                  {true, false},
		"tests/api.rs":                {true, true},
		"tests/common/mod.rs":         {true, true},
		"target/debug/build/x/out.rs": {false, false},
		"Cargo.toml":                  {true, false},
		"calc/.cargo/config.toml":     {true, false},
		"build.rs":                    {true, false},
		"tools/gen.py":                {false, false},
		"src/target/mod.rs":           {true, false},
		"tests/fixtures/data.txt":     {false, false},
	} {
		if a.Owns(p) != want[0] || a.IsTestFile(p) != want[1] {
			t.Errorf("%s: Owns %v IsTestFile %v, want %v", p, a.Owns(p), a.IsTestFile(p), want)
		}
	}
}
