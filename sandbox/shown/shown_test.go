package shown_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/sandbox/shown/showntest"
)

func TestForms(t *testing.T) {
	for _, tc := range []struct{ in, text, line string }{
		{"plain ascii", "plain ascii", "plain ascii"},
		{"a\tb\nc", "a\tb\nc", `a\tb\nc`},
		{"e\x1b[2Kf", `e\x1b[2Kf`, `e\x1b[2Kf`},
		{"r\rs", `r\rs`, `r\rs`},
		{"crlf\r\nend\r", "crlf\r\nend\\r", `crlf\r\nend\r`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"c1\u009b", `c1\u009b`, `c1\u009b`},
		{"rlo\u202eolr", `rlo\u202eolr`, `rlo\u202eolr`},
		{"tag\U000e0041", `tag\U000e0041`, `tag\U000e0041`},
		{"bad\xff\xe2\x80", `bad\xff\xe2\x80`, `bad\xff\xe2\x80`},
		{"héllo wörld ✓ 日本 😀", "héllo wörld ✓ 日本 😀", "héllo wörld ✓ 日本 😀"},
		{`back\slash \x1b`, `back\slash \x1b`, `back\slash \x1b`},
		{"log ##[add-mask]x ##VSO[task]", `log #\x23[add-mask]x #\x23VSO[task]`, `log #\x23[add-mask]x #\x23VSO[task]`},
		{" \u00a0::error::x\n\t::warning::y a::b", " \u00a0\\x3a:error::x\n\t\\x3a:warning::y a::b", " \u00a0\\x3a:error::x\\n\\t::warning::y a::b"},
	} {
		if got := shown.Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
		if got := shown.Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
	if got := shown.Flat("  make\n\tAdd\u2028add \x1b[8m "); got != `make Add add \x1b[8m` {
		t.Errorf("Flat = %q", got)
	}
}

// The suite against each form of the package itself.
func TestSuiteLine(t *testing.T) {
	showntest.Run(t, showntest.Options{}, func(t *testing.T, cs []showntest.Case) []byte {
		var b strings.Builder
		for _, c := range cs {
			b.WriteString("FINDING real " + shown.Line(c.Text) + "\n")
		}
		return []byte(b.String())
	})
}

func TestSuiteTextOneByteWrites(t *testing.T) {
	opts := showntest.Options{Shown: shown.Text, Lines: true, Unplantable: "\n\t"}
	showntest.Run(t, opts, func(t *testing.T, cs []showntest.Case) []byte {
		var out bytes.Buffer
		w := shown.NewWriter(&out)
		for _, c := range cs {
			in := []byte(c.Text + "\n")
			for i := range in {
				if _, err := w.Write(in[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	})
}

func TestSuiteJSON(t *testing.T) {
	// What an editor renders: the decoded strings.
	// encoding/json has made each byte that is not UTF-8 U+FFFD already.
	opts := showntest.Options{Shown: func(s string) string { return shown.Text(string([]rune(s))) }, Lines: true}
	showntest.Run(t, opts, func(t *testing.T, cs []showntest.Case) []byte {
		m := map[string]any{}
		for _, c := range cs {
			m[c.Text] = []string{c.Text}
		}
		b, err := shown.JSON(m)
		if err != nil {
			t.Fatal(err)
		}
		if showntest.Raw(b) != nil {
			t.Fatalf("raw hidden bytes in the encoding: %v", showntest.Raw(b))
		}
		var back map[string][]string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for k, v := range back {
			out.WriteString(k + "\n" + v[0] + "\n")
		}
		return []byte(out.String())
	})
}

func TestWriterSplitsEverywhere(t *testing.T) {
	in := "a\u202eb\xe2\x80\xae\U000e0041\x1b[2K\r\n\xff\r##[x\xe2\x80"
	want := shown.Text(in)
	for cut := 0; cut <= len(in); cut++ {
		for cut2 := cut; cut2 <= len(in); cut2++ {
			var out bytes.Buffer
			w := shown.NewWriter(&out)
			w.Write([]byte(in[:cut]))
			w.Write([]byte(in[cut:cut2]))
			w.Write([]byte(in[cut2:]))
			w.Flush()
			if out.String() != want {
				t.Fatalf("writes cut at %d,%d: %q, want %q", cut, cut2, out.String(), want)
			}
		}
	}
}

func TestJSONTextKeepsShape(t *testing.T) {
	in := []byte(`{"a\u001b[2K": ["x\u202ey", 1.5e3, true, null, "<&>"], "b": {"c": "\"quote\\"}}`)
	got, err := shown.JSONText(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a\\x1b[2K": ["x\\u202ey", 1.5e3, true, null, "<&>"], "b": {"c": "\"quote\\"}}`
	if string(got) != want {
		t.Errorf("JSONText:\n got %s\nwant %s", got, want)
	}
	raw := []byte("{\"k\": \"v\x7f\xff\"}")
	got, err = shown.JSONText(raw)
	if err != nil || string(got) != `{"k": "v\\x7f`+"\ufffd"+`"}` {
		t.Errorf("JSONText of raw DEL and a bad byte: %q %v", got, err)
	}
	if _, err := shown.JSONText([]byte(`{"a":`)); err != shown.ErrNotJSON {
		t.Errorf("JSONText of a cut document: %v", err)
	}
}

// FuzzShown: nothing hidden survives any form, sanitising twice changes
// nothing, the Writer agrees with Text however the input is cut, and plain
// text is left alone.
func FuzzShown(f *testing.F) {
	for _, a := range showntest.Attacks() {
		f.Add(a.Payload, uint8(3))
	}
	f.Add("plain text\twith tabs\n", uint8(0))
	f.Fuzz(func(t *testing.T, s string, cut uint8) {
		text, line := shown.Text(s), shown.Line(s)
		if strings.Contains(text, "##[") || strings.Contains(line, "##[") {
			t.Fatalf("a workflow command survived in %q", s)
		}
		if r := showntest.Raw([]byte(text)); r != nil {
			t.Fatalf("Text(%q) = %q holds %v", s, text, r)
		}
		if strings.ContainsAny(line, "\n\t") || showntest.Raw([]byte(line)) != nil {
			t.Fatalf("Line(%q) = %q is not one clean line", s, line)
		}
		if shown.Text(text) != text || shown.Line(line) != line || shown.Text(line) != line {
			t.Fatalf("sanitising %q twice changed it", s)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, shown.Hidden) && !strings.Contains(s, "##") && !strings.Contains(s, "::") && line != s {
			t.Fatalf("clean %q changed to %q", s, line)
		}
		var out bytes.Buffer
		w := shown.NewWriter(&out)
		c := int(cut) % (len(s) + 1)
		w.Write([]byte(s[:c]))
		w.Write([]byte(s[c:]))
		w.Flush()
		if !strings.Contains(s, "::") && out.String() != text {
			t.Fatalf("Writer cut at %d: %q, Text: %q", c, out.String(), text)
		}
		b, err := shown.JSON(s)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if json.Unmarshal(b, &back) != nil || showntest.Raw([]byte(back)) != nil {
			t.Fatalf("JSON(%q) = %s decodes to hidden runes", s, b)
		}
		// What an editor decodes is Text of what was encoded (encoding/json
		// has made each byte that is not UTF-8 U+FFFD), whichever way the
		// literal was written: HTML-escaped, or with its runes raw.
		want := shown.Text(string([]rune(s)))
		if back != want {
			t.Fatalf("JSON(%q) decodes to %q, want %q", s, back, want)
		}
		var raw bytes.Buffer
		enc := json.NewEncoder(&raw)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		b, err = shown.JSONText(bytes.TrimSpace(raw.Bytes()))
		if err != nil || json.Unmarshal(b, &back) != nil || back != want {
			t.Fatalf("JSONText of %s: %s (%v), want %q", raw.Bytes(), b, err, want)
		}
	})
}

// benchText is 64 KiB of ordinary Go source, the common case: nothing to
// escape.
var benchText = strings.Repeat("func Add(a, b int) int {\n\t// sum of a and b — naïve\n\treturn a + b\n}\n", 64<<10/64)

func BenchmarkTextClean(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		_ = shown.Text(benchText)
	}
}

func BenchmarkTextHostile(b *testing.B) {
	s := strings.Repeat("x\x1b[2K\u202ey\xff ", len(benchText)/12)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = shown.Text(s)
	}
}

func BenchmarkWriter(b *testing.B) {
	w := shown.NewWriter(io.Discard)
	p := []byte(benchText)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		w.Write(p)
	}
}

// BenchmarkJSONText is an LSP result the size of a task diff with its
// files' contents (about 300 KiB of strings).
func BenchmarkJSONText(b *testing.B) {
	files := make([]map[string]string, 5)
	for i := range files {
		files[i] = map[string]string{"path": "pkg/file.go", "base": benchText, "head": benchText}
	}
	doc, err := json.Marshal(map[string]any{"files": files})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := shown.JSONText(doc); err != nil {
			b.Fatal(err)
		}
	}
}
