// Package shown is the one sanitizer for text that came from the worktree,
// a test run or the model on its way to a terminal or an editor: diff
// lines, file and test names, test output, events, reasons, model text.
//
// It decides by what the reader will see, not by a list of known attacks:
// a rune is shown as itself only when it is a graphic character that a
// terminal or editor draws as a visible glyph (or the plain space).
// Everything else — C0 and C1 controls and with them every escape sequence
// (CSI, OSC, DCS, ...), DEL, bidirectional overrides and isolates (Trojan
// Source, CVE-2021-42574), zero-width and other default-ignorable
// characters, line and paragraph separators, private-use and unassigned
// code points, and bytes that are not UTF-8 — is written as a visible escape
// (\x1b, \u202e, \U000e0041, \xff) and never passed through.
//
// Text keeps newlines, tabs and the carriage return of a CRLF line ending,
// for multi-line output (a diff, test output); Line makes them visible too, for a field inside a line-oriented
// format, so an agent-controlled name cannot start a line of its own.
//
// A backslash is shown as itself: the escaped form of a rune and the same
// characters typed literally look alike (a known limit, chosen so that
// code with string literals stays readable in a diff).
package shown

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is not shown as itself: anything a terminal or
// editor would not draw as a visible glyph, would act on (controls) or
// would use to reorder or hide text (bidi controls, default-ignorable
// characters). Newline and tab are hidden too; Text keeps them on purpose.
func Hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r < 0x20 || r == 0x7f:
		return true // C0 controls (ESC starts every escape sequence), DEL
	case r < 0x7f:
		return false
	case !unicode.IsGraphic(r):
		// Cc (C1: CSI, OSC, DCS, NEL as single runes), Cf (bidi
		// overrides and isolates, LRM/RLM/ALM, zero-width, BOM, tags),
		// Zl, Zp, Co, Cn, surrogates.
		return true
	}
	// Graphic but drawn as nothing: variation selectors (data smuggled
	// after an emoji), Hangul fillers, the combining grapheme joiner.
	return unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// Text returns s with every hidden rune and every byte that is not UTF-8
// made visible, keeping newlines and tabs.
func Text(s string) string { return sanitize(s, true) }

// Line returns s as one line: like Text, and newlines, carriage returns and
// tabs are made visible too (\n, \r, \t).
func Line(s string) string { return sanitize(s, false) }

// Flat returns s as one short-form line: runs of white space (newlines
// included) become one space, then the rest is made visible as by Line.
// It suits a summary of free text (a goal, a note); a name must keep its
// exact spelling and goes through Line.
func Flat(s string) string { return Line(strings.Join(strings.Fields(s), " ")) }

// clean reports whether s is shown as itself by Text (keepLines) or Line.
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return cleanFrom(s[i:], keepLines)
		}
		if (c < 0x20 || c == 0x7f) && !(keepLines && kept(s, i)) {
			return false
		}
	}
	return true
}

// kept reports whether the control at s[i] stays as it is in Text: a
// newline, a tab, or a carriage return that ends a line (CRLF), which a
// terminal draws exactly as the newline alone and an editor reads as a
// line ending. A carriage return anywhere else returns to the start of
// the line to overwrite it, and is escaped.
func kept(s string, i int) bool {
	switch s[i] {
	case '\n', '\t':
		return true
	case '\r':
		return i+1 < len(s) && s[i+1] == '\n'
	}
	return false
}

func cleanFrom(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (Hidden(r) && !(keepLines && kept(s, i))) {
			return false
		}
		i += n
	}
	return true
}

func sanitize(s string, keepLines bool) string {
	if clean(s, keepLines) && !strings.Contains(s, "##") && !strings.Contains(s, "::") {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	return string(neutraliseCommands(appendShown(b, s, keepLines), true))
}

// neutraliseCommands breaks the workflow commands a CI runner would act on
// in b (already shown): GitHub's runner takes "##[command]" (and Azure
// Pipelines "##vso[") anywhere in a log line, and "::command::" at the
// start of a line after white space. The second '#' and the first ':'
// become \x23 and \x3a. The start of b counts as the start of a line:
// a field may be printed first on a line. Without lineCommands only the
// "##[" forms are broken (the Writer: bcode's own annotations start lines
// with "::").
func neutraliseCommands(b []byte, lineCommands bool) []byte {
	if !bytes.Contains(b, []byte("##")) && (!lineCommands || !bytes.Contains(b, []byte("::"))) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	lineStart := true
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == '#' && i > 0 && b[i-1] == '#' && (bytes.HasPrefix(b[i+1:], []byte("[")) || hasPrefixFold(b[i+1:], "vso[")):
			out = appendByteEscape(out, '#')
		case r == ':' && lineCommands && lineStart && bytes.HasPrefix(b[i+1:], []byte(":")):
			out = appendByteEscape(out, ':')
		default:
			out = append(out, b[i:i+n]...)
		}
		switch {
		case r == '\n':
			lineStart = true
		case !unicode.IsSpace(r):
			lineStart = false
		}
		i += n
	}
	return out
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// appendShown appends the shown form of s to b; s must hold whole runes
// (a cut rune at its end is shown as bytes).
func appendShown(b []byte, s string, keepLines bool) []byte {
	for i := 0; i < len(s); {
		// Runs of printable ASCII, the common case, are copied whole.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < 0x7f {
			j++
		}
		if j > i {
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = appendByteEscape(b, s[i])
		case keepLines && r < 0x20 && kept(s, i):
			b = append(b, byte(r))
		case Hidden(r):
			b = appendRuneEscape(b, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

const hexDigits = "0123456789abcdef"

func appendByteEscape(b []byte, c byte) []byte {
	return append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}

// appendRuneEscape writes r the way Go writes it in a string literal:
// \n, \r, \t for the three a reader knows, \xNN below 0x80, \uNNNN and
// \UNNNNNNNN above.
func appendRuneEscape(b []byte, r rune) []byte {
	switch {
	case r == '\n':
		return append(b, '\\', 'n')
	case r == '\r':
		return append(b, '\\', 'r')
	case r == '\t':
		return append(b, '\\', 't')
	case r < 0x80:
		return appendByteEscape(b, byte(r))
	case r <= 0xffff:
		return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	b = append(b, '\\', 'U')
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[r>>uint(shift)&0xf])
	}
	return b
}
