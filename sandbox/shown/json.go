package shown

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotJSON is JSONText's error for input that is not one JSON value.
var ErrNotJSON = errors.New("shown: not a JSON value")

// JSON encodes v as encoding/json does, with every string in it (keys
// included) in the form Text gives it, so an editor or a viewer that renders
// the decoded strings shows no hidden character either.
func JSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return JSONText(b)
}

// JSONIndent is JSON, indented as json.MarshalIndent indents.
func JSONIndent(v any, prefix, indent string) ([]byte, error) {
	b, err := JSON(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, prefix, indent); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// JSONText rewrites every string of the encoded JSON value doc (keys
// included) into the form Text gives it, keeping everything else byte for
// byte; strings already shown as themselves are copied as they are. A doc
// that is not valid JSON is refused with ErrNotJSON.
func JSONText(doc []byte) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, ErrNotJSON
	}
	out := make([]byte, 0, len(doc))
	for i := 0; i < len(doc); {
		if doc[i] != '"' {
			out = append(out, doc[i])
			i++
			continue
		}
		end := stringEnd(doc, i)
		lit := doc[i:end]
		if literalShown(lit) {
			out = append(out, lit...)
			i = end
			continue
		}
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			return nil, ErrNotJSON
		}
		if t := Text(s); t != s || needsReencode(lit) {
			enc, err := marshalString(t)
			if err != nil {
				return nil, err
			}
			out = append(out, enc...)
		} else {
			out = append(out, lit...)
		}
		i = end
	}
	return out, nil
}

// literalShown reports, without decoding, whether the string literal lit
// decodes to text that Text leaves as it is: valid UTF-8 with no hidden rune
// (raw or as a \uXXXX escape) but newline and tab, and no "##" or "::" for
// neutraliseCommands to look at. False sends it to the full path.
func literalShown(lit []byte) bool {
	if bytes.Contains(lit, []byte("##")) || bytes.Contains(lit, []byte("::")) {
		return false
	}
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return false
			}
			switch body[i+1] {
			case 'n', 't', '"', '\\', '/':
				i += 2
			case 'u':
				if i+6 > len(body) {
					return false
				}
				var r rune
				for _, h := range body[i+2 : i+6] {
					r <<= 4
					switch {
					case '0' <= h && h <= '9':
						r |= rune(h - '0')
					case 'a' <= h && h <= 'f':
						r |= rune(h-'a') + 10
					case 'A' <= h && h <= 'F':
						r |= rune(h-'A') + 10
					default:
						return false
					}
				}
				if (r != '\n' && r != '\t' && Hidden(r)) || utf16.IsSurrogate(r) {
					return false
				}
				i += 6
			default:
				return false // \b, \f, \r: the full path decides
			}
		case c >= 0x20 && c < 0x7f:
			i++
		default:
			r, n := utf8.DecodeRune(body[i:])
			if (r == utf8.RuneError && n == 1) || Hidden(r) {
				return false
			}
			i += n
		}
	}
	return true
}

// stringEnd returns the index just past the string literal starting at
// doc[start] (a quote); doc is valid JSON.
func stringEnd(doc []byte, start int) int {
	for j := start + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

// needsReencode reports whether a literal holds bytes that are not UTF-8
// (json.Valid accepts them inside strings; decoding made them U+FFFD): it
// is re-encoded from the decoded value.
func needsReencode(lit []byte) bool { return !utf8.Valid(lit) }

// marshalString encodes s without HTML escaping: <, > and & are shown.
func marshalString(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
