package rust

import (
	"strings"
	"testing"
)

// FuzzTestFns: any bytes tokenize and parse to an end, and every token
// is a piece of the input, in order.
func FuzzTestFns(f *testing.F) {
	for _, s := range []string{
		"#[test]\nfn a() {}\n",
		"mod m { #[tokio::test] async fn b() { let _ = r##\"x\"#\"##; } }",
		"/* /* */ fn 'a '\\u{1F600}' b'x' \"\\\"\" €\xff r#type",
		"#![cfg(any())]\n#[test] fn c<'a>() -> &'a str { \"\" }",
		"fn unterminated() { \"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		rest := string(src)
		for _, tok := range lex(src) {
			i := strings.Index(rest, tok.text)
			if tok.text == "" || i < 0 {
				t.Fatalf("token %q is not the next piece of the input", tok.text)
			}
			rest = rest[i+len(tok.text):]
		}
		for _, fn := range testFns(src) {
			if fn.Name == "" {
				t.Fatalf("a test without a name in %q", src)
			}
		}
	})
}
