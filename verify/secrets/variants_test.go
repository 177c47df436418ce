package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// The variants of issue 12 item 5 (and more): a canary, an environment
// secret, a host path and a gitleaks-detectable key, each written the ways
// an agent in the sandbox can print it cheaply. Every variant is first
// shown to get past the redactor as it was (legacyRedact, the control:
// otherwise the case proves nothing) and then to be held by Redact.

// interleave puts sep between the characters of s.
func interleave(s, sep string) string {
	return strings.Join(strings.Split(s, ""), sep)
}

// mapRunes applies f to each character of s.
func mapRunes(s string, f func(rune) string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(f(r))
	}
	return b.String()
}

func fullwidth(s string) string {
	return mapRunes(s, func(r rune) string {
		if r > ' ' && r < 0x7F {
			return string(r - '!' + '！')
		}
		return string(r)
	})
}

// mathSansBold spells letters and digits in MATHEMATICAL SANS-SERIF BOLD.
func mathSansBold(s string) string {
	return mapRunes(s, func(r rune) string {
		switch {
		case 'a' <= r && r <= 'z':
			return string(0x1D5EE + r - 'a')
		case 'A' <= r && r <= 'Z':
			return string(0x1D5D4 + r - 'A')
		case '0' <= r && r <= '9':
			return string(0x1D7EC + r - '0')
		}
		return string(r)
	})
}

// circled spells letters and digits 1-9 as circled characters.
func circled(s string) string {
	return mapRunes(s, func(r rune) string {
		switch {
		case 'a' <= r && r <= 'z':
			return string(0x24D0 + r - 'a')
		case '1' <= r && r <= '9':
			return string(0x2460 + r - '1')
		}
		return string(r)
	})
}

// cyrillic swaps Latin letters for Cyrillic look-alikes where one exists.
func cyrillic(s string) string {
	m := map[rune]string{'a': "а", 'c': "с", 'e': "е", 'o': "о", 'p': "р", 'x': "х", 'y': "у", 'i': "і", 'j': "ј", 's': "ѕ"}
	return mapRunes(s, func(r rune) string {
		if c, ok := m[r]; ok {
			return c
		}
		return string(r)
	})
}

func foldLines(s string, width int, nl string) string {
	var lines []string
	for len(s) > width {
		lines = append(lines, s[:width])
		s = s[width:]
	}
	return strings.Join(append(lines, s), nl)
}

// b64At is base64 of value after k bytes of other data: the value starts
// at byte offset k of a 3-byte group.
func b64At(enc *base64.Encoding, k int, value string) string {
	return enc.EncodeToString([]byte(strings.Repeat("~", k) + value))
}

func hexEscapes(s, prefix string) string {
	return mapRunes(s, func(r rune) string { return fmt.Sprintf("%s%02x", prefix, r) })
}

func jsonEscapes(s string) string {
	return mapRunes(s, func(r rune) string { return fmt.Sprintf(`\u%04x`, r) })
}

func ansiColoured(s string) string {
	return mapRunes(s, func(r rune) string { return fmt.Sprintf("\x1b[3%dm%c\x1b[0m", r%8, r) })
}

type variant struct {
	name, payload string
	// lead is text before the payload that is not itself secret (the
	// "aws_access_key_id = " a rule needs).
	lead string
}

// leakVariants are the forms the redactor before normalisation let
// through.
func leakVariants(canary, core, envSecret, path, awsKey string) []variant {
	rev := reverseRunes
	return []variant{
		// the canary and its core
		{"canary core without prefix", core, ""},
		{"canary upper-cased", strings.ToUpper(canary), ""},
		{"core upper-cased", strings.ToUpper(core), ""},
		{"core with three characters cut off (${C:11})", core[3:], ""},
		{"core after an escape that swallows a letter (ESC [)", "\x1b[" + core, ""},
		{"canary reversed", rev(canary), ""},
		{"core reversed", rev(core), ""},
		{"canary folded across lines (fold -w 5)", foldLines(canary, 5, "\n"), ""},
		{"canary folded with CRLF", foldLines(canary, 7, "\r\n"), ""},
		{"canary spaced out", interleave(canary, " "), ""},
		{"core tab-separated", interleave(core, "\t"), ""},
		{"canary with U+2060 between characters", interleave(canary, "\u2060"), ""},
		{"canary with soft hyphens (U+00AD)", interleave(canary, "\u00ad"), ""},
		{"canary with U+2063 invisible separators", interleave(canary, "\u2063"), ""},
		{"canary with LRM/RLM marks (U+200E/F)", interleave(canary, "\u200e\u200f"), ""},
		{"canary with Mongolian vowel separator (U+180E)", interleave(canary, "\u180e"), ""},
		{"canary fullwidth", fullwidth(canary), ""},
		{"core in mathematical sans-serif bold", mathSansBold(core), ""},
		{"core in circled letters", circled(core), ""},
		{"canary with Cyrillic look-alikes", cyrillic(canary), ""},
		{"core with combining marks (zalgo)", interleave(core, "\u0301") + "\u0301", ""},
		{"canary coloured letter by letter (ANSI)", ansiColoured(canary), ""},
		{"core dash-separated", interleave(core, "-"), ""},
		{"core as a Python list", "['" + interleave(core, "', '") + "']", ""},
		{"core ROT13", rot13(core), ""},
		{"canary base64 at byte offset 1", b64At(base64.StdEncoding, 1, canary), ""},
		{"canary base64 at byte offset 2", b64At(base64.StdEncoding, 2, canary), ""},
		{"core base64 at byte offset 0", b64At(base64.StdEncoding, 0, core), ""},
		{"canary base64url at byte offset 1", b64At(base64.RawURLEncoding, 1, canary+"?>?>"), ""},
		{"canary base64 wrapped at 8 columns", foldLines(b64At(base64.StdEncoding, 0, canary), 8, "\n"), ""},
		{"canary base64 with U+2060 in it", interleave(b64At(base64.StdEncoding, 0, canary), "\u2060"), ""},
		{"canary base64 fullwidth", fullwidth(b64At(base64.StdEncoding, 0, canary)), ""},
		{"base64 string reversed", rev(b64At(base64.StdEncoding, 0, canary)), ""},
		{"base64 of the reversed canary", b64At(base64.StdEncoding, 1, rev(canary)), ""},
		{"base64 of the upper-cased core", b64At(base64.StdEncoding, 2, strings.ToUpper(core)), ""},
		{"base64 of base64", b64At(base64.StdEncoding, 0, b64At(base64.StdEncoding, 1, canary)), ""},
		{"core hex", hex.EncodeToString([]byte(core)), ""},
		{"core hex upper-case", strings.ToUpper(hex.EncodeToString([]byte(core))), ""},
		{"canary hex, space between bytes", strings.TrimSpace(mapRunes(canary, func(r rune) string { return fmt.Sprintf("%02x ", r) })), ""},
		{"canary \\x escapes", hexEscapes(canary, `\x`), ""},
		{"canary 0x bytes, comma-separated", strings.TrimSuffix(mapRunes(canary, func(r rune) string { return fmt.Sprintf("0x%02X, ", r) }), ", "), ""},
		{"canary percent-encoded", hexEscapes(canary, "%"), ""},
		{"canary JSON \\u escapes", jsonEscapes(canary), ""},
		{"canary hex reversed", rev(hex.EncodeToString([]byte(canary))), ""},
		{"hex of base64", hex.EncodeToString([]byte(b64At(base64.StdEncoding, 2, canary))), ""},
		{"canary upper-cased, reversed, spaced", interleave(rev(strings.ToUpper(canary)), " "), ""},
		// an environment secret
		{"env secret lower-cased", strings.ToLower(envSecret), ""},
		{"env secret spaced out", interleave(envSecret, " "), ""},
		{"env secret reversed", rev(envSecret), ""},
		{"env secret with U+2060", interleave(envSecret, "\u2060"), ""},
		{"env secret base64 at byte offset 2", b64At(base64.StdEncoding, 2, envSecret), ""},
		{"env secret's last part alone", envSecret[strings.LastIndex(envSecret, "/")+1:], ""},
		// a host path
		{"host path base64 at byte offset 0", b64At(base64.StdEncoding, 0, path), ""},
		{"host path base64 at byte offset 1", b64At(base64.StdEncoding, 1, path), ""},
		{"host path base64 at byte offset 2", b64At(base64.StdEncoding, 2, path), ""},
		{"host path base64url", b64At(base64.URLEncoding, 1, path+"/x"), ""},
		{"host path hex", hex.EncodeToString([]byte(path)), ""},
		{"host path with U+2060", interleave(path, "\u2060"), ""},
		{"host path upper-cased", strings.ToUpper(path), ""},
		{"host path reversed", rev(path), ""},
		{"host path fullwidth", fullwidth(path), ""},
		// a key gitleaks' rules find
		{"AWS key fullwidth", fullwidth(awsKey), "aws_access_key_id = "},
		{"AWS key with U+2060", interleave(awsKey, "\u2060"), "aws_access_key_id = "},
		{"AWS key in mathematical bold", mathSansBold(awsKey), "aws_access_key_id = "},
	}
}

type variantSecrets struct {
	canary, core, envSecret, path, awsKey string
	scanner                               *Scanner
}

func newVariantSecrets(t testing.TB) variantSecrets {
	canary, err := NewCanary()
	if err != nil {
		t.Fatal(err)
	}
	core, ok := CanaryCore(canary)
	if !ok {
		t.Fatalf("CanaryCore(%q) failed", canary)
	}
	v := variantSecrets{
		canary: canary, core: core,
		envSecret: "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY" + fmt.Sprintf("%018x", uint64(0x7a3c91e5b2d4f)),
		path:      "/home/alice-b5x/.local/state/bcode",
		awsKey:    fakeAWSKey(),
	}
	s, err := NewScannerKnown(Known{Values: []string{canary, v.envSecret}, Paths: []string{v.path}})
	if err != nil {
		t.Fatal(err)
	}
	v.scanner = s
	return v
}

// leaked reports whether out still shows payload: the payload itself, its
// visible characters, or any 16-byte stretch of them.
func leaked(out, payload string) bool {
	p, _ := StripInvisible(payload)
	if strings.Contains(out, payload) || strings.Contains(out, p) {
		return true
	}
	const w = 16
	for i := 0; i+w <= len(p); i++ {
		if utf8.RuneStart(p[i]) && strings.Contains(out, p[i:i+w]) {
			return true
		}
	}
	return false
}

// keptAround reports whether out begins with head and ends with tail, but
// for a few bytes at their inner edges holding at most two letters or
// digits, which occur in secrets.
func keptAround(out, head, tail, secrets string) bool {
	taken := func(lost string) bool {
		var alnum []byte
		for _, c := range []byte(lost) {
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				alnum = append(alnum, c)
			}
		}
		return len(lost) <= 8 && len(alnum) <= 2 && strings.Contains(strings.ToLower(secrets), strings.ToLower(string(alnum)))
	}
	p := 0
	for p < len(out) && p < len(head) && out[p] == head[p] {
		p++
	}
	q := 0
	for q < len(out)-p && q < len(tail) && out[len(out)-1-q] == tail[len(tail)-1-q] {
		q++
	}
	return taken(head[p:]) && taken(tail[:len(tail)-q])
}

func TestVariantsHeld(t *testing.T) {
	v := newVariantSecrets(t)
	variants := leakVariants(v.canary, v.core, v.envSecret, v.path, v.awsKey)
	const before, after = "$ ./run.sh\nstarting\n", "\ndone (exit 0)\n"
	armed, held := 0, 0
	for _, tt := range variants {
		t.Run(tt.name, func(t *testing.T) {
			text := before + tt.lead + tt.payload + after
			old, _ := legacyRedact(v.scanner, legacyHostPaths(text, []string{v.path}))
			if !leaked(old, tt.payload) {
				t.Fatalf("control: the old redactor already held %q, so this variant proves nothing", tt.payload)
			}
			armed++
			out, n := v.scanner.Redact(text)
			if leaked(out, tt.payload) || n == 0 {
				t.Fatalf("leaked (%d changes):\n  in:  %q\n  out: %q", n, text, out)
			}
			// Only the payload's bytes were replaced, but for the
			// characters next to it that continue the secret: a canary
			// is found by any canaryWindow characters of its core, so
			// when the text before a core cut short ends with the
			// character cut off ("startin|g" + "zp6…" for "gzp6…"),
			// that character is taken too. The random canary makes
			// that happen now and then; it is the documented rule, not
			// a change around the payload.
			if !keptAround(out, before+tt.lead, after, v.core+v.canary+v.envSecret) {
				t.Errorf("text around the payload changed:\n  in:  %q\n  out: %q", text, out)
			}
			held++
		})
	}
	t.Logf("%d variants tried: %d got past the old redactor, %d held by the new one", len(variants), armed, held)
	if len(variants) < 15 {
		t.Errorf("only %d variants", len(variants))
	}
}

// TestVariantsOldRedactorHeld are the forms the old redactor already held:
// they still are.
func TestVariantsOldRedactorHeld(t *testing.T) {
	v := newVariantSecrets(t)
	for _, tt := range []variant{
		{"canary raw", v.canary, ""},
		{"canary aligned base64", base64.StdEncoding.EncodeToString([]byte(v.canary)), ""},
		{"canary aligned base64url", base64.RawURLEncoding.EncodeToString([]byte(v.canary)), ""},
		{"canary hex", hex.EncodeToString([]byte(v.canary)), ""},
		{"canary hex upper", strings.ToUpper(hex.EncodeToString([]byte(v.canary))), ""},
		{"canary with zero-width spaces", interleave(v.canary, "\u200b"), ""},
		{"canary with tag characters", interleave(v.canary, "\U000E0041"), ""},
		{"canary with bidi overrides", interleave(v.canary, "\u202e"), ""},
		{"env secret raw", v.envSecret, ""},
		{"AWS key raw", v.awsKey, "aws_access_key_id = "},
	} {
		text := "x\n" + tt.lead + tt.payload + "\ny\n"
		if old, _ := legacyRedact(v.scanner, text); leaked(old, tt.payload) {
			t.Errorf("%s: the old redactor did not hold it either: %q", tt.name, old)
		}
		if out, _ := v.scanner.Redact(text); leaked(out, tt.payload) || !strings.HasPrefix(out, "x\n") || !strings.HasSuffix(out, "\ny\n") {
			t.Errorf("%s: %q", tt.name, out)
		}
	}
}

// TestFoundSecretElsewhere: a key gitleaks finds once is found again in
// the same text, reversed or spaced out, where no rule would see it.
func TestFoundSecretElsewhere(t *testing.T) {
	s := newTestScanner(t)
	key := fakeAWSKey()
	for _, other := range []string{reverseRunes(key), interleave(key, " "), strings.ToLower(key)} {
		text := "aws_access_key_id = " + key + "\nbackup: " + other + "\n"
		if old, _ := legacyRedact(s, text); !strings.Contains(old, other) {
			t.Fatalf("control: %q held by the old redactor", other)
		}
		out, _ := s.Redact(text)
		if strings.Contains(out, key) || strings.Contains(out, other) {
			t.Errorf("%q survived: %q", other, out)
		}
	}
}

// TestNoFalsePositives: real Go and Python source from GOROOT, with a
// scanner that knows a canary, an environment secret and the host paths
// of this machine (home, temp dir, GOROOT's parent), comes out unchanged.
func TestNoFalsePositives(t *testing.T) {
	canary, _ := NewCanary()
	home, _ := os.UserHomeDir()
	paths := []string{home, os.TempDir(), t.TempDir(), "/home/alice-b5x/.local/state/bcode"}
	s, err := NewScannerKnown(Known{Values: []string{canary, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "s3cr3t-env-value-41d8"}, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	root := goroot(t)
	files := []string{
		filepath.Join(root, "src", "net", "http", "server.go"),
		filepath.Join(root, "src", "encoding", "base64", "base64_test.go"),
		filepath.Join(root, "src", "runtime", "runtime-gdb.py"),
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%v (the test reads Go's own sources from GOROOT)", err)
		}
		out, n := s.Redact(string(data))
		if n != 0 || out != string(data) {
			t.Errorf("%s: %d changes", f, n)
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "[REDACTED") {
					t.Logf("  %s", l)
				}
			}
		}
		t.Logf("%s: %d bytes, unchanged", filepath.Base(f), len(data))
	}
}

// goroot is the go command's GOROOT, whose sources the tests read as real
// code.
func goroot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v (the test reads Go's own sources)", err)
	}
	return strings.TrimSpace(string(out))
}

func TestCanary(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		c, err := NewCanary()
		if err != nil {
			t.Fatal(err)
		}
		core, ok := CanaryCore(c)
		if !ok || len(core) != canaryCoreLen || c != CanaryPrefix+core || seen[core] {
			t.Fatalf("canary %q, core %q, %v", c, core, ok)
		}
		seen[core] = true
	}
	for _, bad := range []string{"", "bcanary_", "bcanary_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "xcanary_abcdefghijklmnopqrstuvwxyz"} {
		if _, ok := CanaryCore(bad); ok {
			t.Errorf("CanaryCore(%q) accepted", bad)
		}
	}
}
