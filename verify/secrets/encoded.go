package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"unicode/utf8"
)

// Encoded secrets are found by decoding, not by encoding each value in
// advance: every run of base64 (standard or URL alphabet) or hex in the
// compact view is decoded at each alignment it can have (four for base64,
// where a value may start at any byte offset of a 3-byte group and the run
// may start mid-group; two for hex), forwards and reversed, and the decoded
// bytes are searched like text, with the same normalisation, down to
// maxEncodedDepth layers (base64 of hex, hex of base64). The decoded bytes
// of one level are searched together, separated by a byte that is never
// text, so a level costs one pass whatever the number of runs.
//
// A match in decoded bytes is redacted as the characters that hold any bit
// of it (for base64, up to one character more on each side than the value
// alone would need).

// maxEncodedDepth is how many encodings are peeled off.
const maxEncodedDepth = 2

// minBase64Run and minHexRun are the shortest runs worth decoding: what
// encodes fewer than MinExtraLen bytes cannot hold a known value.
const (
	minBase64Run = (MinExtraLen*4 + 2) / 3
	minHexRun    = 2 * MinExtraLen
)

// barrier separates decoded runs: invalid UTF-8, never in a value, kept by
// every view, so no match spans two runs.
const barrier = 0xFF

// segment is a stretch of one decoded run in a level's buffer: bytes
// [start, end) of the buffer are bytes [off, off+end-start) of what the
// run's characters at pos (compact-view offsets, in decoding order) decode
// to, each character holding charBits bits.
type segment struct {
	start, end, off int
	pos             []int32
	charBits        int // 6 for base64, 4 for hex
}

// decoded is one level of decoding: the buffer and where each part of it
// came from.
type decoded struct {
	buf  []byte
	segs []segment
}

// add keeps the stretches of out that read as text (see textLen) and are
// long enough to hold a value. A run decoded at the wrong alignment, or a
// word that merely looks like base64, decodes to bytes with no such
// stretch, and costs nothing further.
func (d *decoded) add(out []byte, positions func() []int32, charBits int) {
	var pos []int32 // built on the first stretch kept
	for i := 0; i < len(out); {
		n := textLen(out[i:])
		if n == 0 {
			i++
			continue
		}
		if n >= MinExtraLen {
			if pos == nil {
				pos = positions()
			}
			start := len(d.buf)
			d.buf = append(d.buf, out[i:i+n]...)
			d.segs = append(d.segs, segment{start: start, end: len(d.buf), off: i, pos: pos, charBits: charBits})
			d.buf = append(d.buf, barrier)
		}
		i += n
	}
}

// textLen returns the length of the text at the start of b: printable
// ASCII, whitespace, NUL (UTF-16 and \u0000 escapes) and ESC, and valid
// multi-byte UTF-8.
func textLen(b []byte) int {
	i := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c >= 0x20 && c < 0x7F, c == '\t', c == '\n', c == '\r', c == 0, c == 0x1b:
			i++
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return i
			}
			i += size
		default:
			return i
		}
	}
	return i
}

// source maps decoded bytes [i, j) back to the compact-view span of the
// characters that encode them.
func (d *decoded) source(i, j int) (int, int, bool) {
	k, found := slices.BinarySearchFunc(d.segs, i, func(s segment, i int) int {
		switch {
		case s.end <= i:
			return -1
		case s.start > i:
			return 1
		}
		return 0
	})
	if !found {
		return 0, 0, false
	}
	s := d.segs[k]
	j = min(j, s.end)
	// The characters holding any bit of bytes [i, j).
	bi, bj := s.off+i-s.start, s.off+j-s.start
	cs := bi * 8 / s.charBits
	ce := min(len(s.pos), (bj*8+s.charBits-1)/s.charBits)
	lo, hi := s.pos[cs], s.pos[cs]
	for _, p := range s.pos[cs:ce] {
		lo, hi = min(lo, p), max(hi, p)
	}
	return int(lo), int(hi) + 1, true
}

func isBase64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isHexSeparator reports characters that may sit between the digits of
// hex-written bytes: \x62, 0x62, %62, 62:63, 62,63, 62-63, \u0062, U+0062,
// &#x62;. A run may hold them; only its digits are decoded.
func isHexSeparator(c byte) bool {
	switch c {
	case '\\', 'x', 'X', '%', ':', ',', '-', 'u', 'U', '+', '#', '&', ';':
		return true
	}
	return false
}

// decodeRuns decodes every base64 and hex run of the compact view text.
func decodeRuns(text []byte) decoded {
	var d decoded
	decodeBase64Runs(text, &d)
	decodeHexRuns(text, &d)
	decodeBase32Runs(text, &d)
	return d
}

// decodeBase64Runs decodes every base64 run of text (either alphabet),
// forwards and reversed, at each of the four alignments.
func decodeBase64Runs(text []byte, d *decoded) {
	var std []byte
	var out []byte
	for i := 0; i < len(text); {
		if !isBase64Char(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isBase64Char(text[j]) {
			j++
		}
		if j-i >= minBase64Run {
			// One alphabet: '-' and '_' are URL-safe '+' and '/'.
			std = append(std[:0], text[i:j]...)
			for k, c := range std {
				switch c {
				case '-':
					std[k] = '+'
				case '_':
					std[k] = '/'
				}
			}
			for _, reversed := range []bool{false, true} {
				if reversed {
					slices.Reverse(std)
				}
				for a := range 4 {
					n := len(std) - a
					if n%4 == 1 {
						n--
					}
					if n < minBase64Run {
						continue
					}
					out = slices.Grow(out[:0], base64.RawStdEncoding.DecodedLen(n))[:base64.RawStdEncoding.DecodedLen(n)]
					w, err := base64.RawStdEncoding.Decode(out, std[a:a+n])
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
					}, 6)
				}
			}
		}
		i = j
	}
}

// decodeHexRuns decodes every run of hex-written bytes of text (digits
// and the separators between them), forwards and reversed, at both
// alignments.
func decodeHexRuns(text []byte, d *decoded) {
	var out []byte
	var digits []byte
	var pos []int32
	for i := 0; i < len(text); {
		if !isHexDigit(text[i]) {
			i++
			continue
		}
		digits, pos = digits[:0], pos[:0]
		j := i
		for j < len(text) && (isHexDigit(text[j]) || isHexSeparator(text[j])) {
			c := text[j]
			switch {
			case c == '0' && j+1 < len(text) && (text[j+1] == 'x' || text[j+1] == 'X'):
				j += 2 // a 0x prefix
				continue
			case isHexDigit(c):
				digits = append(digits, c)
				pos = append(pos, int32(j))
			}
			j++
		}
		if len(digits) >= minHexRun {
			for _, reversed := range []bool{false, true} {
				if reversed {
					slices.Reverse(digits)
					slices.Reverse(pos)
				}
				for a := range 2 {
					n := (len(digits) - a) &^ 1
					if n < minHexRun {
						continue
					}
					out = slices.Grow(out[:0], n/2)[:n/2]
					if _, err := hex.Decode(out, digits[a:a+n]); err != nil {
						continue
					}
					d.add(out, func() []int32 { return slices.Clone(pos[a : a+n]) }, 4)
				}
			}
		}
		i = max(j, i+1)
	}
}
