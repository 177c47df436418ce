package secrets

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A secret reaches a model in whatever form the text around it takes: the
// agent can print it upper-cased, reversed, spaced out, folded across
// lines, with invisible characters between its letters, in fullwidth or
// mathematical letters. Matching runs on normalised views of the text, in
// which all of these spell the same bytes, and each byte of a view
// remembers the span of the original text it came from, so what is
// replaced is the original's bytes and nothing else.
//
// The views, each built from the one before:
//
//	nfkc     format characters (Unicode Cf: zero-width, bidi, tag, U+2060,
//	         soft hyphen, ...) and terminal escape sequences dropped, then
//	         Unicode NFKC (fullwidth, mathematical and circled letters,
//	         ligatures become ASCII). gitleaks' rules run on this view.
//	compact  nfkc without whitespace (so line and space folding disappear),
//	         control characters and accents (NFD, combining marks dropped);
//	         case kept, since base64 and hex runs are read from it.
//	fold     compact lower-cased, with Cyrillic and Greek look-alikes of
//	         Latin letters mapped to them.
//	skel     fold with only letters and digits: punctuation between the
//	         characters of a secret ("a-b-c", "['a', 'b']") disappears.

// view is a text after a transformation, with for each of its bytes the
// span [from, to) of the source text that produced it.
type view struct {
	text     []byte
	from, to []int32
	// ident marks a view equal to its source byte for byte (ASCII text with
	// nothing to drop): no offsets are stored.
	ident bool
}

// source returns the span of the source text that produced view bytes
// [i, j), j > i.
func (v *view) source(i, j int) (int, int) {
	if v.ident {
		return i, j
	}
	return int(v.from[i]), int(v.to[j-1])
}

func (v *view) appendByte(c byte, from, to int) {
	v.text = append(v.text, c)
	v.from = append(v.from, int32(from))
	v.to = append(v.to, int32(to))
}

func (v *view) appendRune(r rune, from, to int) {
	if r < utf8.RuneSelf {
		v.appendByte(byte(r), from, to)
		return
	}
	n := len(v.text)
	v.text = utf8.AppendRune(v.text, r)
	for range len(v.text) - n {
		v.from = append(v.from, int32(from))
		v.to = append(v.to, int32(to))
	}
}

// isFormat reports Unicode format characters (category Cf): they render as
// nothing and are dropped before any matching.
func isFormat(r rune) bool {
	return r >= 0xAD && unicode.Is(unicode.Cf, r)
}

// ansiLen returns the length of the terminal escape sequence at the start
// of s (s[0] is ESC): CSI (colours, cursor moves), OSC (titles, links,
// ended by BEL or ESC \), or a two-byte escape. A terminal shows none of
// it, so a secret coloured letter by letter is still one word.
func ansiLen(s string) int {
	if len(s) < 2 {
		return 1
	}
	switch s[1] {
	case '[':
		i := 2
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3F {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7E {
			return i + 1
		}
		return i
	case ']':
		for i := 2; i < len(s) && i < 4096 && s[i] != '\n'; i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return 2
	}
	if s[1] >= 0x40 && s[1] <= 0x5F {
		return 2
	}
	return 1
}

// nfkcView drops format characters and escape sequences from s and
// normalises the rest to NFKC, segment by segment (a segment is a starter
// and the combining marks after it, the unit NFKC composes), so every byte
// of the result maps to the segment it came from.
func nfkcView(s string) view {
	if plainASCII(s) {
		return view{text: []byte(s), ident: true}
	}
	v := view{
		text: make([]byte, 0, len(s)),
		from: make([]int32, 0, len(s)),
		to:   make([]int32, 0, len(s)),
	}
	var seg, out []byte
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			i += ansiLen(s[i:])
			continue
		}
		// An ASCII byte not followed by a combining mark is its own
		// segment and its own normal form.
		if c < utf8.RuneSelf && (i+1 == len(s) || s[i+1] < utf8.RuneSelf) {
			v.appendByte(c, i, i+1)
			i++
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size <= 1 {
			// Invalid UTF-8 (decoded binary, mostly) stays as it is.
			v.appendByte(c, i, i+1)
			i++
			continue
		}
		n := norm.NFKC.NextBoundaryInString(s[i:], true)
		if n <= 0 {
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		seg = seg[:0]
		for j := i; j < i+n; {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !isFormat(r) {
				seg = append(seg, s[j:j+size]...)
			}
			j += size
		}
		out = norm.NFKC.Append(out[:0], seg...)
		for _, b := range out {
			v.appendByte(b, i, i+n)
		}
		i += n
	}
	return v
}

// plainASCII reports text with no byte above 0x7F and no escape: its NFKC
// view is itself.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == 0x1b {
			return false
		}
	}
	return true
}

// folded holds the views matching runs on after nfkc (see the package's
// comment on views), each mapped to the original text.
type folded struct {
	compact, fold, skel view
}

// foldViews builds compact, fold and skel from nv.
func foldViews(nv *view) folded {
	n := len(nv.text)
	f := folded{
		compact: view{text: make([]byte, 0, n), from: make([]int32, 0, n), to: make([]int32, 0, n)},
		fold:    view{text: make([]byte, 0, n), from: make([]int32, 0, n), to: make([]int32, 0, n)},
		skel:    view{text: make([]byte, 0, n), from: make([]int32, 0, n), to: make([]int32, 0, n)},
	}
	t := nv.text
	var dec []byte
	for k := 0; k < len(t); {
		c := t[k]
		if c < utf8.RuneSelf {
			// ASCII: the common case, without rune decoding.
			k++
			if c <= ' ' || c == 0x7F {
				continue // whitespace and controls
			}
			from, to := nv.source(k-1, k)
			f.compact.appendByte(c, from, to)
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			f.fold.appendByte(c, from, to)
			if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
				f.skel.appendByte(c, from, to)
			}
			continue
		}
		r, size := utf8.DecodeRune(t[k:])
		from, to := nv.source(k, k+size)
		k += size
		if r == utf8.RuneError && size == 1 {
			// A byte of binary: kept in every view, so no match joins
			// text across it.
			f.compact.appendByte(t[k-1], from, to)
			f.fold.appendByte(t[k-1], from, to)
			f.skel.appendByte(t[k-1], from, to)
			continue
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) || isFormat(r) || unicode.In(r, unicode.Mn, unicode.Me) {
			continue
		}
		// Accents go: NFKC composed "v\u0301" to "v́" but "u\u0301" to "ú",
		// and a secret with a mark on every letter is still it.
		dec = norm.NFD.AppendString(dec[:0], string(r))
		for _, r := range string(dec) {
			if unicode.In(r, unicode.Mn, unicode.Me) {
				continue
			}
			f.compact.appendRune(r, from, to)
			r = unicode.ToLower(r)
			if l, ok := lookalike[r]; ok {
				r = l
			}
			f.fold.appendRune(r, from, to)
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				f.skel.appendRune(r, from, to)
			}
		}
	}
	return f
}

// lookalike maps lower-case Cyrillic and Greek letters that look like a
// Latin letter (in either case) to it. NFKC leaves them alone; a secret
// spelled with them reads the same to a model. A short table, not Unicode's
// full confusables list: it covers the letters a secret's alphabet uses.
var lookalike = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'з': '3', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k',
	'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't', 'у': 'y', 'х': 'x',
	'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ь': 'b', 'г': 'r', 'п': 'n',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'ζ': 'z', 'η': 'h', 'ι': 'i', 'κ': 'k', 'μ': 'm',
	'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'ω': 'w', 'γ': 'y',
}

// normalForms returns what s is in the fold and skel views: the forms a
// known value is searched for.
func normalForms(s string) (fold, skel string) {
	nv := nfkcView(s)
	f := foldViews(&nv)
	return string(f.fold.text), string(f.skel.text)
}
