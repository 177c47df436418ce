package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"mime/quotedprintable"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// quotedPrintable is s as mime/quotedprintable writes it with every byte
// encoded (=62=63...), lines broken at 76 with soft line breaks.
func quotedPrintableAll(s string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); i++ {
		if n >= 72 {
			b.WriteString("=\r\n")
			n = 0
		}
		fmt.Fprintf(&b, "=%02X", s[i])
		n += 3
	}
	return b.String()
}

// quotedPrintableWriter is what Go's own encoder makes of s: plain letters,
// soft line breaks.
func quotedPrintableWriter(s string) string {
	var b strings.Builder
	w := quotedprintable.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.String()
}

// softBroken cuts s every k bytes with quoted-printable soft line breaks.
func softBroken(s string, k int) string {
	var parts []string
	for len(s) > k {
		parts = append(parts, s[:k])
		s = s[k:]
	}
	return strings.Join(append(parts, s), "=\n")
}

// everyOther applies enc to every second character of s.
func everyOther(s string, enc func(rune) string) string {
	var b strings.Builder
	for i, r := range s {
		if i%2 == 1 {
			b.WriteString(enc(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func stutter(s string, k int) string {
	return mapRunes(s, func(r rune) string { return strings.Repeat(string(r), k) })
}

// doubleStruck spells letters with HTML5's named references for the
// double-struck letters (&bopf; is U+1D553, which NFKC reads as "b").
func doubleStruck(s string) string {
	return mapRunes(s, func(r rune) string {
		if 'a' <= r && r <= 'z' {
			return "&" + string(r) + "opf;"
		}
		return string(r)
	})
}

type decodedVariant struct {
	name, payload string
	// decode is how a reader of the output gets the text back; the test
	// looks for the secret in what it returns, not only in the output.
	decode func(string) string
}

func unescapeVariants(canary, core string) []decodedVariant {
	urlDecode := func(s string) string {
		if d, err := url.PathUnescape(s); err == nil {
			return d
		}
		return s
	}
	destutter := func(k int) func(string) string {
		return func(s string) string {
			var b strings.Builder
			for i := 0; i < len(s); i += k {
				b.WriteByte(s[i])
			}
			return b.String()
		}
	}
	b32 := base32.StdEncoding
	return []decodedVariant{
		{"canary quoted-printable, every byte", quotedPrintableAll(canary), qpDecode},
		{"core quoted-printable, lower-case hex", strings.ToLower(quotedPrintableAll(core)), qpDecode},
		{"canary quoted-printable, every other byte", everyOther(canary, func(r rune) string { return fmt.Sprintf("=%02X", r) }), qpDecode},
		{"canary with quoted-printable soft line breaks", softBroken(canary, 5), qpDecode},
		{"core with CRLF soft line breaks", strings.ReplaceAll(softBroken(core, 3), "=\n", "=\r\n"), qpDecode},
		{"canary through Go's quoted-printable writer, long line", quotedPrintableWriter(strings.Repeat("x", 70) + canary), qpDecode},
		{"canary HTML decimal references", mapRunes(canary, func(r rune) string { return fmt.Sprintf("&#%d;", r) }), html.UnescapeString},
		{"canary HTML hex references", mapRunes(canary, func(r rune) string { return fmt.Sprintf("&#x%x;", r) }), html.UnescapeString},
		{"canary HTML decimal, no semicolons", mapRunes(canary, func(r rune) string { return fmt.Sprintf("&#%d", r) }), html.UnescapeString},
		{"core every other letter a decimal reference", everyOther(core, func(r rune) string { return fmt.Sprintf("&#%d;", r) }), html.UnescapeString},
		{"core in named references (&bopf;)", doubleStruck(core), html.UnescapeString},
		{"canary with &shy; between letters", interleave(canary, "&shy;"), html.UnescapeString},
		{"canary with &ZeroWidthSpace; between letters", interleave(canary, "&ZeroWidthSpace;"), html.UnescapeString},
		{"canary doubled letters", stutter(canary, 2), destutter(2)},
		{"core tripled letters", stutter(core, 3), destutter(3)},
		{"canary doubled and spaced (ssee ccrreett)", interleave(stutter(canary, 2), " "), func(s string) string { return destutter(2)(strings.ReplaceAll(s, " ", "")) }},
		{"canary, every other letter percent-encoded", everyOther(canary, func(r rune) string { return fmt.Sprintf("%%%02x", r) }), urlDecode},
		{"canary percent-encoded twice", strings.ReplaceAll(hexEscapes(canary, "%"), "%", "%25"), func(s string) string { return urlDecode(urlDecode(s)) }},
		{"core octal escapes", mapRunes(core, func(r rune) string { return fmt.Sprintf(`\%03o`, r) }), readEscapes},
		{"core \\u{...} escapes", mapRunes(core, func(r rune) string { return fmt.Sprintf(`\u{%x}`, r) }), readEscapes},
		{"canary every other letter \\x-escaped", everyOther(canary, func(r rune) string { return fmt.Sprintf(`\x%02x`, r) }), readEscapes},
		{"canary backslash before every letter", mapRunes(canary, func(r rune) string { return `\` + string(r) }), func(s string) string { return strings.ReplaceAll(s, `\`, "") }},
		{"core as decimal character codes, comma list", strings.TrimSuffix(mapRunes(core, func(r rune) string { return fmt.Sprintf("%d, ", r) }), ", "), readCodeList},
		{"canary as od -An -tu1 prints it (aligned columns, 16 a line)", odDecimal(canary), readCodeList},
		{"core as decimal character codes, spaces", strings.TrimSpace(mapRunes(core, func(r rune) string { return fmt.Sprintf("%d ", r) })), readCodeList},
		{"canary base32", b32.EncodeToString([]byte(canary)), func(s string) string { b, _ := b32.DecodeString(s); return string(b) }},
		{"canary base32 lower-case, no padding", strings.ToLower(strings.TrimRight(b32.EncodeToString([]byte("~~"+canary)), "=")), readBase32},
		{"canary base32 reversed", reverseRunes(strings.TrimRight(b32.EncodeToString([]byte("~"+canary)), "=")), func(s string) string { return readBase32(reverseRunes(s)) }},
		{"canary base64 of quoted-printable", b64At(base64.StdEncoding, 1, quotedPrintableAll(canary)), func(s string) string { return qpDecode(readBase64(s)) }},
		{"canary quoted-printable of HTML references", strings.ReplaceAll(mapRunes(canary, func(r rune) string { return fmt.Sprintf("&#%d;", r) }), "&", "=26"), func(s string) string { return html.UnescapeString(qpDecode(s)) }},
	}
}

// readEscapes decodes \\x, \\u{} and octal escapes.
func readEscapes(s string) string {
	re := regexp.MustCompile(`\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|[0-7]{3})`)
	return re.ReplaceAllStringFunc(s, func(e string) string {
		e = strings.Trim(e[1:], "u{}")
		base := 8
		if e[0] == 'x' {
			e, base = e[1:], 16
		} else if len(e) != 3 || strings.Trim(e, "01234567") != "" {
			base = 16
		}
		n, _ := strconv.ParseUint(e, base, 32)
		return string(rune(n))
	})
}

// odDecimal is s as `od -An -tu1` prints it.
func odDecimal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 && i%16 == 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%4d", s[i])
	}
	return b.String()
}

// readCodeList reads every number in s as a character code.
func readCodeList(s string) string {
	return regexp.MustCompile(`\d+[, \n]*`).ReplaceAllStringFunc(s, func(e string) string {
		n, _ := strconv.Atoi(strings.TrimRight(e, ", \n"))
		return string(rune(n))
	})
}

func readBase32(s string) string {
	s = strings.ToUpper(s)
	b, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s[:len(s)/8*8])
	return string(b)
}

func readBase64(s string) string {
	b, _ := base64.StdEncoding.DecodeString(s)
	return string(b)
}

func qpDecode(s string) string {
	d, err := readQP(s)
	if err != nil {
		return s
	}
	return d
}

// readQP decodes quoted-printable the way a mail reader does.
func readQP(s string) (string, error) {
	b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(s)))
	return string(b), err
}

// TestUnescapeVariantsHeld: each encoding a reader undoes without knowing
// the secret's shape, applied to a canary, is redacted: neither the
// output nor the output decoded as the reader would decode it holds 16
// characters of the canary's core, and the text around it is kept.
func TestUnescapeVariantsHeld(t *testing.T) {
	v := newVariantSecrets(t)
	const before, after = "$ ./run.sh\nstarting\n", "\ndone (exit 0)\n"
	for _, tt := range unescapeVariants(v.canary, v.core) {
		t.Run(tt.name, func(t *testing.T) {
			if !showsCore(tt.decode(tt.payload), v.core) {
				t.Fatalf("control: the payload does not decode to the canary: %q", tt.decode(tt.payload))
			}
			text := before + tt.payload + after
			out, n := v.scanner.Redact(text)
			if n == 0 || showsCore(out, v.core) || showsCore(tt.decode(out), v.core) {
				t.Fatalf("leaked (%d changes):\n  in:  %q\n  out: %q", n, text, out)
			}
			if !strings.HasPrefix(out, before) || !strings.HasSuffix(out, after) {
				t.Errorf("text around the payload changed:\n  in:  %q\n  out: %q", text, out)
			}
		})
	}
}

// showsCore reports whether s holds 16 consecutive characters of core,
// in any case.
func showsCore(s, core string) bool {
	s, _ = StripInvisible(norm.NFKC.String(s))
	s = strings.ToLower(s)
	for i := 0; i+canaryWindow <= len(core); i++ {
		if strings.Contains(s, core[i:i+canaryWindow]) {
			return true
		}
	}
	return false
}

// TestUnescapeNoFalsePositives: text full of escapes that hold no secret
// comes out unchanged.
func TestUnescapeNoFalsePositives(t *testing.T) {
	v := newVariantSecrets(t)
	for _, text := range []string{
		"Content-Type: text/plain; charset=3DUTF-8=\r\nSubject: =?utf-8?q?caf=C3=A9?=\r\n",
		"<p>caf&eacute; &amp; cr&egrave;me &#169; 2024 &#x2014; &lt;b&gt;</p>",
		"GET /search?q=hello%20world&lang=en%2Dus HTTP/1.1",
		`printf "\x1b[1m\u00e9\101\n"`,
		"ports = [8080, 8081, 8082, 8083, 8084, 8085, 8086, 8087, 8088, 8089]",
		"aaabbbcccdddeeefffggghhhiiijjjkkklllmmmnnnooo",
		"MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43UOV3HO6DZPI====== and ORSXG5BAMJQXGZJTGIQGK3TDN5SGS3THEE",
	} {
		if out, n := v.scanner.Redact(text); n != 0 || out != text {
			t.Errorf("%d changes:\n  in:  %q\n  out: %q", n, text, out)
		}
	}
}
