package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeControls makes text that came from someone else (a task's goal, a
// reason, an event's data) safe to print on a terminal: control characters
// (ESC sequences that move the cursor, retitle the window or clear the
// screen, a carriage return that overwrites the line, C1 controls, DEL) and
// the bidirectional overrides that reorder what is shown become visible
// escapes like \x1b and \u202e. Invalid UTF-8 bytes become \xff.
func escapeControls(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clip shortens s to at most n runes, ending in "..." when it cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}
