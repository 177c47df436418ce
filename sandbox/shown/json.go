package shown

import (
	"bytes"
	"encoding/json"
	"errors"
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
