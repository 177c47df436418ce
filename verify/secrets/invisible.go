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
// drops them all from what it returns, and terminal escape sequences too
// (see ansiLen): what a model reads is what the matching saw, so nothing an
// escape hides from the matching (ESC [ q swallows the q) reaches it.

// hasHidden reports whether s may have a format character or an escape.
func hasHidden(s string) bool { return !plainASCII(s) }

// keepFormat reports the one format character kept: a byte-order mark at
// the very start, where it is an encoding marker, not hidden content.
func keepFormat(r rune, at int) bool { return r == 0xFEFF && at == 0 }

// countFormat counts the format characters and escape sequences
// StripInvisible removes.
func countFormat(s string) int {
	if !hasHidden(s) {
		return 0
	}
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += ansiLen(s[i:])
			n++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isFormat(r) && !keepFormat(r, i) {
			n++
		}
		i += size
	}
	return n
}

// writeVisible writes s[start:end] to b without its format characters and
// escape sequences. start and end are never inside an escape sequence:
// they come from views, which hold none of its bytes.
func writeVisible(b *strings.Builder, s string, start, end int) {
	if !hasHidden(s[start:end]) {
		b.WriteString(s[start:end])
		return
	}
	for i := start; i < end; {
		if s[i] == 0x1b {
			i += ansiLen(s[i:])
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:end])
		if !isFormat(r) || keepFormat(r, i) {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// StripInvisible removes format characters (Unicode Cf) and terminal
// escape sequences from s and returns how many it removed. A byte-order
// mark at the very start of s is kept. Invalid UTF-8 is left as it is.
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
