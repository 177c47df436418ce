package rust

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind classifies a Rust token as far as finding tests needs.
type tokenKind int

const (
	tokIdent    tokenKind = iota // identifiers and keywords (raw r#x included)
	tokLifetime                  // 'a
	tokLiteral                   // strings, chars, numbers
	tokPunct                     // one punctuation character
)

// token is one Rust token; comments and whitespace are not tokens, so two
// sources that differ only in them tokenize alike.
type token struct {
	kind tokenKind
	text string
	line int // 1-based
	off  int // byte offset of its first byte in the source
}

// lex splits src into tokens. It never fails: text it cannot read (an
// unterminated string or comment) ends the stream, and a change to such a
// file still reads as a change.
func lex(src []byte) []token {
	l := &lexer{src: string(src), line: 1}
	for l.pos < len(l.src) {
		l.next()
	}
	return l.out
}

type lexer struct {
	src  string
	pos  int
	line int
	out  []token
}

func (l *lexer) emit(kind tokenKind, start, startLine int) {
	l.out = append(l.out, token{kind: kind, text: l.src[start:l.pos], line: startLine, off: start})
}

// advance moves past n bytes, counting newlines.
func (l *lexer) advance(n int) {
	end := min(l.pos+n, len(l.src))
	l.line += strings.Count(l.src[l.pos:end], "\n")
	l.pos = end
}

func (l *lexer) peek(off int) byte {
	if l.pos+off < len(l.src) {
		return l.src[l.pos+off]
	}
	return 0
}

func (l *lexer) next() {
	c := l.src[l.pos]
	start, line := l.pos, l.line
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		l.advance(1)
	case c == '/' && l.peek(1) == '/':
		end := strings.IndexByte(l.src[l.pos:], '\n')
		if end < 0 {
			end = len(l.src) - l.pos
		}
		l.advance(end)
	case c == '/' && l.peek(1) == '*':
		l.blockComment()
	case c == '"':
		l.quoted(1)
		l.emit(tokLiteral, start, line)
	case c == '\'':
		l.quote()
	case isRawStringStart(l.src[l.pos:]):
		l.rawString()
		l.emit(tokLiteral, start, line)
	case (c == 'b' || c == 'c') && l.peek(1) == '"':
		l.quoted(2)
		l.emit(tokLiteral, start, line)
	case c == 'b' && l.peek(1) == '\'':
		l.advance(1)
		l.charLiteral()
		l.emit(tokLiteral, start, line)
	case c >= '0' && c <= '9':
		l.number()
		l.emit(tokLiteral, start, line)
	case c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)):
		l.ident()
		l.emit(tokIdent, start, line)
	default:
		l.advance(1)
		l.emit(tokPunct, start, line)
	}
}

// blockComment skips a /* */ comment; Rust's nest.
func (l *lexer) blockComment() {
	depth := 0
	for l.pos < len(l.src) {
		switch {
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			depth++
			l.advance(2)
		case strings.HasPrefix(l.src[l.pos:], "*/"):
			depth--
			l.advance(2)
			if depth == 0 {
				return
			}
		default:
			l.advance(1)
		}
	}
}

// quoted skips a string whose opening quote ends at offset open, with
// backslash escapes.
func (l *lexer) quoted(open int) {
	l.advance(open)
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case '\\':
			l.advance(2)
		case '"':
			l.advance(1)
			return
		default:
			l.advance(1)
		}
	}
}

// isRawStringStart reports whether s starts r"…", r#"…"#, br#…, cr#….
func isRawStringStart(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "b"), "c")
	if !strings.HasPrefix(s, "r") {
		return false
	}
	s = strings.TrimLeft(s[1:], "#")
	return strings.HasPrefix(s, "\"")
}

// rawString skips a raw string: no escapes, closed by a quote and as many
// hashes as opened it.
func (l *lexer) rawString() {
	i := strings.IndexByte(l.src[l.pos:], 'r')
	l.advance(i + 1)
	hashes := 0
	for l.peek(0) == '#' {
		hashes++
		l.advance(1)
	}
	l.advance(1) // the opening quote
	closing := "\"" + strings.Repeat("#", hashes)
	end := strings.Index(l.src[l.pos:], closing)
	if end < 0 {
		l.advance(len(l.src) - l.pos)
		return
	}
	l.advance(end + len(closing))
}

// quote reads what starts with a single quote: a char literal ('a', '\n',
// '\u{1F600}') or a lifetime or label ('a, 'static).
func (l *lexer) quote() {
	start, line := l.pos, l.line
	if l.peek(1) == '\\' {
		l.charLiteral()
		l.emit(tokLiteral, start, line)
		return
	}
	_, size := utf8.DecodeRuneInString(l.src[l.pos+1:])
	if size > 0 && l.peek(1+size) == '\'' {
		l.advance(2 + size)
		l.emit(tokLiteral, start, line)
		return
	}
	l.advance(1)
	for l.pos < len(l.src) && isIdentByte(l.src[l.pos]) {
		l.advance(1)
	}
	l.emit(tokLifetime, start, line)
}

// charLiteral skips '…' with escapes, the quote at l.pos.
func (l *lexer) charLiteral() {
	l.advance(1)
	for l.pos < len(l.src) && l.src[l.pos] != '\n' {
		switch l.src[l.pos] {
		case '\\':
			l.advance(2)
		case '\'':
			l.advance(1)
			return
		default:
			l.advance(1)
		}
	}
}

func (l *lexer) number() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		// A dot belongs to the number only when a digit follows (1.5,
		// not 1..2 or 1.max(2)).
		if isIdentByte(c) || c == '.' && l.peek(1) >= '0' && l.peek(1) <= '9' {
			l.advance(1)
			continue
		}
		return
	}
}

// ident reads an identifier; a byte that starts none (a symbol outside
// ASCII, invalid UTF-8) is a token of its own, so lexing always moves on.
func (l *lexer) ident() {
	start := l.pos
	if strings.HasPrefix(l.src[l.pos:], "r#") {
		l.advance(2)
	}
	for l.pos < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			break
		}
		l.advance(size)
	}
	if l.pos == start {
		_, size := utf8.DecodeRuneInString(l.src[l.pos:])
		l.advance(max(size, 1))
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
