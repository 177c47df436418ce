package secrets

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// legacyRedact is Redact as it was before normalisation (commit e2d4c19):
// tag, bidi and zero-width characters stripped, then gitleaks' rules and
// the known values raw, in aligned base64 and in hex. It is kept only as
// the control of the variant tests (each variant must get past it, or the
// test proves nothing) and as the benchmark's baseline.
func legacyRedact(s *Scanner, text string) (string, int) {
	clean, stripped := legacyStripInvisible(text)
	matches := s.scan("", clean)
	matches = slices.DeleteFunc(matches, func(m match) bool { return m.start < 0 })
	if len(matches) == 0 {
		return clean, stripped
	}
	slices.SortFunc(matches, func(a, b match) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return (b.end - b.start) - (a.end - a.start)
	})
	var b strings.Builder
	b.Grow(len(clean))
	pos, count := 0, 0
	for i := 0; i < len(matches); {
		m := matches[i]
		end := m.end
		j := i + 1
		for ; j < len(matches) && matches[j].start < end; j++ {
			end = max(end, matches[j].end)
		}
		b.WriteString(clean[pos:m.start])
		b.WriteString("[REDACTED:" + m.rule + "]")
		pos = end
		count++
		i = j
	}
	b.WriteString(clean[pos:])
	return b.String(), count + stripped
}

func legacyIsInvisible(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r >= 0x200B && r <= 0x200D, r == 0xFEFF:
		return true
	}
	return false
}

func legacyStripInvisible(s string) (string, int) {
	if strings.IndexByte(s, 0xE2) < 0 && strings.IndexByte(s, 0xEF) < 0 && strings.IndexByte(s, 0xF3) < 0 {
		return s, 0
	}
	var b strings.Builder
	removed := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if legacyIsInvisible(r) && !(r == 0xFEFF && i == 0) {
			removed++
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), removed
}

// legacyHostPaths is the gateway's old path handling: plain occurrences
// only.
func legacyHostPaths(text string, paths []string) string {
	for _, p := range paths {
		text = strings.ReplaceAll(text, p, "$HOST")
	}
	return text
}
