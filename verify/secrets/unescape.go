package secrets

import (
	"encoding/base32"
	"html"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Escapes are undone the way the consumer of the text would undo them,
// without knowing what the escaped text is: a model reading "=62=63" or
// "&#98;&#x63;" or "%62c" reads "bc". Every decoder here turns one escape
// syntax of the whole text back into characters and keeps, for each byte
// it writes, the span of the text it came from, so a known value found in
// the unescaped text is replaced in the original, escapes and all. Text
// may mix escaped and plain characters ("bcanary_%61bc"): only the escapes
// change, which is what distinguishes these decoders from the run decoders
// of encoded.go (base64, hex, base32), which need the whole value encoded.
//
//	unescapeText  percent-encoding (%62), quoted-printable (=62, and the
//	              soft line break "=" at a line's end), HTML and XML
//	              character references (&amp; &#98; &#x62;, every name
//	              HTML5 defines), backslash escapes (\x62 \u0062 \u{62}
//	              \U00000062 \142 and \n \t ...), and a backslash before
//	              any other character.
//	charCodes     lists of character codes ("98, 99, 97" or "98 99 97",
//	              what chr()/String.fromCharCode print), decimal.

// unescapeText decodes every escape of the four syntaxes above in text. It
// reports false when there was none.
func unescapeText(text []byte) (view, bool) {
	v := view{text: make([]byte, 0, len(text)), from: make([]int32, 0, len(text)), to: make([]int32, 0, len(text))}
	changed := false
	for i := 0; i < len(text); {
		r, n := decodeEscape(text, i)
		if n == 0 {
			v.appendByte(text[i], i, i+1)
			i++
			continue
		}
		changed = true
		if r >= 0 {
			v.appendRune(r, i, i+n)
		}
		i += n
	}
	return v, changed
}

// decodeEscape reads the escape at text[i]: the character it stands for
// (-1 for one that stands for nothing, a soft line break) and its length,
// or length 0 when there is no escape at i.
func decodeEscape(text []byte, i int) (rune, int) {
	switch text[i] {
	case '%', '=':
		if i+2 < len(text) && isHexDigit(text[i+1]) && isHexDigit(text[i+2]) {
			b, _ := strconv.ParseUint(string(text[i+1:i+3]), 16, 8)
			return rune(b), 3
		}
		if text[i] == '=' {
			// A quoted-printable soft line break: "=" ending a line.
			if i+1 < len(text) && text[i+1] == '\n' {
				return -1, 2
			}
			if i+2 < len(text) && text[i+1] == '\r' && text[i+2] == '\n' {
				return -1, 3
			}
		}
	case '&':
		return decodeEntity(text, i)
	case '\\':
		return decodeBackslash(text, i)
	}
	return 0, 0
}

// maxEntity bounds the length of a character reference's name.
const maxEntity = 40

// decodeEntity reads an HTML or XML character reference at text[i] ('&'):
// a name HTML5 defines, or a decimal or hex code point, with its ';'
// (numeric ones also without it, as browsers read them).
func decodeEntity(text []byte, i int) (rune, int) {
	j := i + 1
	if j < len(text) && text[j] == '#' {
		j++
		base := 10
		if j < len(text) && (text[j] == 'x' || text[j] == 'X') {
			base = 16
			j++
		}
		k := j
		for k < len(text) && k-j < 8 && (base == 16 && isHexDigit(text[k]) || base == 10 && '0' <= text[k] && text[k] <= '9') {
			k++
		}
		if k == j {
			return 0, 0
		}
		c, err := strconv.ParseUint(string(text[j:k]), base, 32)
		if err != nil || c > utf8.MaxRune {
			return 0, 0
		}
		if k < len(text) && text[k] == ';' {
			k++
		}
		return rune(c), k - i
	}
	for k := j; k < len(text) && k-i <= maxEntity; k++ {
		c := text[k]
		if c == ';' {
			ent := string(text[i : k+1])
			dec := html.UnescapeString(ent)
			if dec == ent {
				return 0, 0
			}
			// A name for two characters (&NotEqualTilde;) keeps the
			// first: what matters is that the reference is not read as
			// text.
			r, _ := utf8.DecodeRuneInString(dec)
			return r, k + 1 - i
		}
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return 0, 0
		}
	}
	return 0, 0
}

// hexRuneAt reads the n hex digits at text[j] as a code point.
func hexRuneAt(text []byte, j, n int) (rune, bool) {
	if j+n > len(text) {
		return 0, false
	}
	for _, c := range text[j : j+n] {
		if !isHexDigit(c) {
			return 0, false
		}
	}
	c, err := strconv.ParseUint(string(text[j:j+n]), 16, 32)
	if err != nil || c > utf8.MaxRune {
		return 0, false
	}
	return rune(c), true
}

// decodeBackslash reads a backslash escape at text[i] ('\\').
func decodeBackslash(text []byte, i int) (rune, int) {
	if i+1 >= len(text) {
		return 0, 0
	}
	hexAt := func(j, n int) (rune, bool) { return hexRuneAt(text, j, n) }
	switch c := text[i+1]; {
	case c == 'x':
		if r, ok := hexAt(i+2, 2); ok {
			return r, 4
		}
	case c == 'u' && i+2 < len(text) && text[i+2] == '{':
		k := i + 3
		for k < len(text) && k-i < 12 && isHexDigit(text[k]) {
			k++
		}
		if k < len(text) && text[k] == '}' && k > i+3 {
			if r, ok := hexAt(i+3, k-(i+3)); ok {
				return r, k + 1 - i
			}
		}
	case c == 'u':
		if r, ok := hexAt(i+2, 4); ok {
			return r, 6
		}
	case c == 'U':
		if r, ok := hexAt(i+2, 8); ok {
			return r, 10
		}
	case '0' <= c && c <= '7':
		k := i + 1
		for k < len(text) && k-i <= 3 && '0' <= text[k] && text[k] <= '7' {
			k++
		}
		o, _ := strconv.ParseUint(string(text[i+1:k]), 8, 32)
		return rune(o), k - i
	case c == 'n', c == 't', c == 'r':
		return ' ', 2
	case c > ' ' && c < 0x7F:
		// \c is c to every shell and most string syntaxes.
		return rune(c), 2
	}
	return 0, 0
}

// minCodes is the shortest list of character codes worth reading: fewer
// cannot spell a value.
const minCodes = MinExtraLen

// charCodes reads lists of decimal character codes: numbers from 32 to
// 126 (or any code point above, written with up to 7 digits) separated by
// one to four bytes of punctuation or white space ("98, 99", od -tu1's
// aligned columns). A list is only ever compared with known values, so
// reading ordinary numbers as characters costs nothing but time. It
// reports false when there was no such list.
func charCodes(text []byte) (view, bool) {
	var v view
	changed := false
	last := 0 // text[last:] is not yet written to v
	flush := func(end int) {
		for k := last; k < end; k++ {
			v.appendByte(text[k], k, k+1)
		}
	}
	for i := 0; i < len(text); {
		if !isDigit(text[i]) || (i > 0 && (isDigit(text[i-1]) || isWordByte(text[i-1]))) {
			i++
			continue
		}
		codes, spans, end := readCodes(text, i)
		if len(codes) < minCodes {
			i = end
			continue
		}
		if v.text == nil {
			v = view{text: make([]byte, 0, len(text)), from: make([]int32, 0, len(text)), to: make([]int32, 0, len(text))}
		}
		flush(i)
		for k, c := range codes {
			v.appendRune(c, spans[k][0], spans[k][1])
		}
		last, i, changed = end, end, true
	}
	if !changed {
		return view{}, false
	}
	flush(len(text))
	return v, true
}

// readCodes reads a list of codes starting at text[i]; end is where the
// list stops.
func readCodes(text []byte, i int) (codes []rune, spans [][2]int, end int) {
	j := i
	for {
		k := j
		for k < len(text) && isDigit(text[k]) && k-j < 7 {
			k++
		}
		if k == j || (k < len(text) && (isDigit(text[k]) || isWordByte(text[k]))) {
			return codes, spans, max(j, i+1)
		}
		c, _ := strconv.Atoi(string(text[j:k]))
		if c < 32 || c == 127 || c > utf8.MaxRune {
			return codes, spans, max(j, i+1)
		}
		codes = append(codes, rune(c))
		spans = append(spans, [2]int{j, k})
		s := k
		for s < len(text) && s-k < 4 && !isDigit(text[s]) && !isWordByte(text[s]) {
			s++
		}
		if s == k || s >= len(text) || !isDigit(text[s]) {
			return codes, spans, k
		}
		j = s
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isWordByte reports letters and '_' (a number inside an identifier is
// not a character code).
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= utf8.RuneSelf
}

// squeeze drops each byte of v equal to the one before it: a secret
// written with every character doubled or tripled ("ssee ccrreett", a
// stutter) and the secret itself squeeze to the same bytes, and so do the
// value's forms, which are squeezed the same way (see forms.squeezed).
// A squeezed byte starts where the last of its run starts and ends where
// the first of its run ends, so a match covers the least of each end's
// run: the text before or after a secret may begin with the secret's
// first or last character, and is not the secret's (in a request, that
// text can be a role or a key that must not be touched). What a match
// leaves is at most one copy of its first and last characters.
func squeeze(v *view) view {
	out := view{text: make([]byte, 0, len(v.text)), from: make([]int32, 0, len(v.text)), to: make([]int32, 0, len(v.text))}
	for i, c := range v.text {
		if i > 0 && c == v.text[i-1] {
			from, _ := v.source(i, i+1)
			out.from[len(out.from)-1] = int32(from)
			continue
		}
		from, to := v.source(i, i+1)
		out.appendByte(c, from, to)
	}
	return out
}

func squeezeString(s string) string {
	b := []byte(s)
	return string(slices.Compact(b))
}

// isBase32Char reports RFC 4648's base32 alphabet, either case.
func isBase32Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '2' <= c && c <= '7'
}

// minBase32Run is the shortest base32 run worth decoding.
const minBase32Run = (MinExtraLen*8 + 4) / 5

// decodeBase32Runs adds to d every run of base32 in text, decoded at each
// of its eight alignments, forwards and reversed, upper-cased first.
func decodeBase32Runs(text []byte, d *decoded) {
	var up, out []byte
	for i := 0; i < len(text); {
		if !isBase32Char(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isBase32Char(text[j]) {
			j++
		}
		if j-i < minBase32Run {
			i = j
			continue
		}
		up = append(up[:0], text[i:j]...)
		for k, c := range up {
			if 'a' <= c && c <= 'z' {
				up[k] = c - 'a' + 'A'
			}
		}
		for _, reversed := range []bool{false, true} {
			if reversed {
				slices.Reverse(up)
			}
			for a := range 8 {
				n := (len(up) - a) / 8 * 8
				// A partial last group: keep the whole characters a
				// value's bytes can end on.
				rest := len(up) - a - n
				for _, ok := range []int{7, 5, 4, 2} {
					if rest >= ok {
						n += ok
						break
					}
				}
				if n < minBase32Run {
					continue
				}
				enc := base32.StdEncoding.WithPadding(base32.NoPadding)
				out = slices.Grow(out[:0], enc.DecodedLen(n))[:enc.DecodedLen(n)]
				w, err := enc.Decode(out, up[a:a+n])
				if err != nil {
					continue
				}
				d.add(out[:w], func() []int32 {
					pos := make([]int32, n)
					for k := range pos {
						if reversed {
							pos[k] = int32(j - 1 - (a + k))
						} else {
							pos[k] = int32(i + a + k)
						}
					}
					return pos
				}, 5)
			}
		}
		i = j
	}
}
