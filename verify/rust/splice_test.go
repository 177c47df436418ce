package rust

import (
	"strings"
	"testing"
)

func TestSpliceTests(t *testing.T) {
	const baseCode = "pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {\n    if x > hi { return x; }\n    x.max(lo)\n}\n"
	const headCode = "pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {\n    if x > hi { return hi; }\n    x.max(lo)\n}\n"
	const baseTests = "\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn inside() { assert_eq!(clamp(5, 0, 10), 5); }\n}\n"
	const headTests = "\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn inside() { assert_eq!(clamp(5, 0, 10), 5); }\n    #[test]\n    fn above() { assert_eq!(clamp(15, 0, 10), 10); } // a } in a comment\n}\n"
	a := New()
	for _, c := range []struct {
		name        string
		code, tests string
		want        string
	}{
		{"base code with the head's tests", baseCode + baseTests, headCode + headTests, baseCode + headTests},
		{"head code with the base's tests", headCode + headTests, baseCode + baseTests, headCode + baseTests},
		{"tests the code side lacks go at the end", baseCode, headCode + headTests, baseCode + "\n" + strings.TrimPrefix(headTests, "\n")},
		{"tests the other side lacks are dropped", baseCode + baseTests, headCode, baseCode + "\n\n"},
		{"pub and a second attribute", baseCode + "#[cfg(test)]\n#[allow(unused)]\npub(crate) mod t {\n    #[test] fn a() {}\n}\n", headCode + "#[allow(unused)]\n#[cfg(test)]\npub(crate) mod t {\n    #[test] fn b() {}\n}\n",
			baseCode + "#[allow(unused)]\n#[cfg(test)]\npub(crate) mod t {\n    #[test] fn b() {}\n}\n"},
	} {
		got, ok := a.SpliceTests("src/lib.rs", []byte(c.code), []byte(c.tests))
		if !ok || string(got) != c.want {
			t.Errorf("%s: ok=%v\n got %q\nwant %q", c.name, ok, got, c.want)
		}
	}
	// A cfg(test) module inside a function or a non-test module is not a
	// file's test module; a file that does not balance splices nothing.
	nested := "fn f() {\n    #[cfg(test)]\n    mod x { }\n}\nmod m {\n    #[cfg(test)]\n    mod y { }\n}\n"
	if ms, ok := testModules([]byte(nested)); !ok || len(ms) != 0 {
		t.Errorf("nested modules: %+v %v", ms, ok)
	}
	if _, ok := a.SpliceTests("src/lib.rs", []byte("fn f() {"), []byte(baseTests)); ok {
		t.Error("an unbalanced file was spliced")
	}
	if _, ok := a.SpliceTests("README.md", []byte("x"), []byte("y")); ok {
		t.Error("a file that is not Rust was spliced")
	}
}
