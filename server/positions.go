package server

import (
	"strings"
	"unicode/utf16"

	"github.com/bcode-dev/bcode/server/lsp"
)

// LSP positions count characters in UTF-16 code units (the protocol's
// default encoding); Go tools count bytes. These helpers convert between
// the two on the actual text, so a diagnostic after "π" or an emoji lands on
// the right character.

// lineStart returns the byte offset where 0-based line begins in text, or
// -1 when text has fewer lines.
func lineStart(text string, line int) int {
	off := 0
	for i := 0; i < line; i++ {
		j := strings.IndexByte(text[off:], '\n')
		if j < 0 {
			return -1
		}
		off += j + 1
	}
	return off
}

// lineAt returns the 0-based line of text without its newline.
func lineAt(text string, line int) (string, bool) {
	start := lineStart(text, line)
	if start < 0 {
		return "", false
	}
	rest := text[start:]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSuffix(rest, "\r"), true
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	// An invalid byte ranges as U+FFFD: one unit, as editors show it.
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// bytePos converts a 1-based line and 1-based byte column (go/token style)
// of text to an LSP position. A column past the end of the line clamps to
// it; ok is false when the line does not exist.
func bytePos(text string, line, col int) (lsp.Position, bool) {
	l, ok := lineAt(text, line-1)
	if !ok || line < 1 {
		return lsp.Position{}, false
	}
	c := col - 1
	if c < 0 {
		c = 0
	}
	if c > len(l) {
		c = len(l)
	}
	return lsp.Position{Line: uint32(line - 1), Character: uint32(utf16Len(l[:c]))}, true
}

// offsetOf converts an LSP position to a byte offset in text, clamping a
// character past the end of its line to the line's end and a line past the
// end of text to len(text).
func offsetOf(text string, p lsp.Position) int {
	start := lineStart(text, int(p.Line))
	if start < 0 {
		return len(text)
	}
	l, _ := lineAt(text, int(p.Line))
	units := 0
	for i, r := range l {
		if units >= int(p.Character) {
			return start + i
		}
		units += utf16.RuneLen(r)
	}
	return start + len(l)
}

// applyChange applies one LSP content change to text.
func applyChange(text string, c lsp.ContentChange) string {
	if c.Range == nil {
		return c.Text
	}
	from, to := offsetOf(text, c.Range.Start), offsetOf(text, c.Range.End)
	if to < from {
		from, to = to, from
	}
	return text[:from] + c.Text + text[to:]
}
