package secrets

import (
	"strings"
	"unicode/utf8"
)

// Format characters (Unicode category Cf, see isFormat) render as nothing
// yet carry meaning to a model or a terminal: tag characters can spell out
// hidden instructions, bidirectional controls reorder what a reviewer sees
// ("Trojan Source"), and zero-width characters, word joiners (U+2060) or
// soft hyphens split a secret so a pattern no longer matches it. Redact
// drops them all from what it returns.

// hasNonASCII reports whether s has a byte above 0x7F: without one, s has
// no format character.
func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// keepFormat reports the one format character kept: a byte-order mark at
// the very start, where it is an encoding marker, not hidden content.
func keepFormat(r rune, at int) bool { return r == 0xFEFF && at == 0 }

// countFormat counts the format characters StripInvisible removes.
func countFormat(s string) int {
	if !hasNonASCII(s) {
		return 0
	}
	n := 0
	for i, r := range s {
		if isFormat(r) && !keepFormat(r, i) {
			n++
		}
	}
	return n
}

// writeVisible writes s[start:end] to b without its format characters.
func writeVisible(b *strings.Builder, s string, start, end int) {
	if !hasNonASCII(s[start:end]) {
		b.WriteString(s[start:end])
		return
	}
	for i := start; i < end; {
		r, size := utf8.DecodeRuneInString(s[i:end])
		if !isFormat(r) || keepFormat(r, i) {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// StripInvisible removes format characters (Unicode Cf) from s and
// returns how many it removed. A byte-order mark at the very start of s is
// kept. Invalid UTF-8 is left as it is.
func StripInvisible(s string) (string, int) {
	n := countFormat(s)
	if n == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	writeVisible(&b, s, 0, len(s))
	return b.String(), n
}
