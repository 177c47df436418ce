package secrets

import (
	"strings"
	"unicode/utf8"
)

// isInvisible reports the characters that render as nothing yet carry
// meaning to a model or a terminal: Unicode tag characters (which can spell
// out hidden instructions), bidirectional controls (which reorder what a
// reviewer sees, "Trojan Source") and zero-width characters (which split a
// secret so a pattern no longer matches it).
func isInvisible(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F: // tag characters
		return true
	case r >= 0x202A && r <= 0x202E: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r >= 0x200B && r <= 0x200D: // zero-width space, non-joiner, joiner
		return true
	case r == 0xFEFF: // zero-width no-break space; a BOM only at the start
		return true
	}
	return false
}

// StripInvisible removes invisible Unicode from s (see isInvisible) and
// returns how many characters it removed. A byte-order mark at the very
// start of s is kept: there it is an encoding marker, not hidden content.
// Invalid UTF-8 is left as it is.
func StripInvisible(s string) (string, int) {
	// Fast path: every character removed here is encoded in UTF-8 with a
	// lead byte of 0xE2 (U+200B-U+2069), 0xEF (U+FEFF) or 0xF3 (tags).
	if strings.IndexByte(s, 0xE2) < 0 && strings.IndexByte(s, 0xEF) < 0 && strings.IndexByte(s, 0xF3) < 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	removed := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isInvisible(r) && !(r == 0xFEFF && i == 0) {
			removed++
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), removed
}
