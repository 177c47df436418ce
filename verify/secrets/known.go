package secrets

import (
	"bytes"
	"slices"
	"unicode"
	"unicode/utf8"
)

// HostPathRule is the rule id of a host path found in a normalised or
// encoded form (the gateway replaces plain occurrences with a placeholder
// before scanning).
const HostPathRule = "host-path"

// minSkeleton is the length from which a value's letters and digits alone
// identify it: values this long are also searched in the skel view (where
// punctuation between characters is gone), ROT13'd, and each run of
// letters and digits this long inside a value (a canary's random core, a
// token without its "ghp_") is searched on its own. Sixteen characters of
// a random alphabet are at least 64 bits: ordinary text does not contain
// them by chance; shorter values are searched only whole.
const minSkeleton = 16

// minPathLen is the shortest host path searched in normalised and encoded
// forms; shorter ones ("/srv") would match ordinary text.
const minPathLen = 5

// form is one normalised form of a known value, searched in one view.
type form struct {
	text []byte
	rule string
}

// forms are the normalised forms of a set of known values and host paths,
// by the view each is searched in.
type forms struct {
	fold, skel []form
	// squeezed are the skel forms with runs of one character squeezed to
	// one (see squeeze), searched in the squeezed skel view.
	squeezed []form
}

func (fs *forms) empty() bool { return len(fs.fold) == 0 && len(fs.skel) == 0 }

// minSqueezed is the shortest squeezed form searched: a random value of
// minSkeleton characters loses a character or two to squeezing.
const minSqueezed = 12

func addForm(list []form, text, rule string) []form {
	if slices.ContainsFunc(list, func(f form) bool { return string(f.text) == text }) {
		return list
	}
	return append(list, form{text: []byte(text), rule: rule})
}

// addValue adds a secret value: its fold form and that reversed; for a
// long one its skeleton, reversed, ROT13'd; and each long core (a run of
// letters and digits) on its own the same way.
func (fs *forms) addValue(v, rule string) {
	fold, skel := normalForms(v)
	if len(fold) >= MinExtraLen {
		fs.fold = addForm(fs.fold, fold, rule)
		fs.fold = addForm(fs.fold, reverseRunes(fold), rule)
	}
	fs.addSkeleton(skel, rule)
	for _, core := range cores(fold) {
		if core != skel {
			fs.addSkeleton(core, rule)
		}
	}
	// A canary's core is random: any canaryWindow characters of it are
	// the canary, so printing it with a few characters cut off (${C:1})
	// leaks it too.
	if core, ok := CanaryCore(v); ok {
		for i := 0; i+canaryWindow <= len(core); i++ {
			fs.addSkeleton(core[i:i+canaryWindow], rule)
		}
	}
}

func (fs *forms) addSkeleton(skel, rule string) {
	if utf8.RuneCountInString(skel) < minSkeleton {
		return
	}
	for _, s := range []string{skel, rot13(skel)} {
		for _, s := range []string{s, reverseRunes(s)} {
			fs.skel = addForm(fs.skel, s, rule)
			if q := squeezeString(s); len(q) >= minSqueezed {
				fs.squeezed = addForm(fs.squeezed, q, rule)
			}
		}
	}
}

// addPath adds a host path: its fold form and that reversed. A path is
// not a random string, so its skeleton ("homealice") is not searched.
func (fs *forms) addPath(p string) {
	fold, _ := normalForms(p)
	if len(fold) < minPathLen {
		return
	}
	fs.fold = addForm(fs.fold, fold, HostPathRule)
	fs.fold = addForm(fs.fold, reverseRunes(fold), HostPathRule)
}

// cores returns the runs of letters and digits of fold at least
// minSkeleton long.
func cores(fold string) []string {
	var out []string
	start := -1
	for i, r := range fold + " " {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && utf8.RuneCountInString(fold[start:i]) >= minSkeleton {
			out = append(out, fold[start:i])
		}
		start = -1
	}
	return out
}

func reverseRunes(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

func rot13(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case 'A' <= c && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(b)
}

// search appends a match for each occurrence of each form in v, placed in
// v's source.
func search(v *view, list []form, out []match) []match {
	for _, f := range list {
		for i := 0; ; {
			j := bytes.Index(v.text[i:], f.text)
			if j < 0 {
				break
			}
			start, end := v.source(i+j, i+j+len(f.text))
			out = append(out, match{rule: f.rule, description: "a value bcode was told is secret, normalised or encoded", start: start, end: end})
			i += j + len(f.text)
		}
	}
	return out
}

// findKnown appends the spans of nv's source that hold one of sets' values
// in any normalised form, or encoded (base64, hex, up to maxEncodedDepth
// layers deep) in any normalised form.
func findKnown(nv *view, sets []*forms, depth int, out []match) []match {
	f := foldViews(nv)
	sq := squeeze(&f.skel)
	for _, fs := range sets {
		out = search(&f.fold, fs.fold, out)
		out = search(&f.skel, fs.skel, out)
		out = search(&sq, fs.squeezed, out)
	}
	if depth >= maxEncodedDepth {
		return out
	}
	// Escapes undone (percent, quoted-printable, character references,
	// backslashes, character codes), searched like the text itself.
	for _, unescape := range []func([]byte) (view, bool){unescapeText, charCodes} {
		uv, ok := unescape(nv.text)
		if !ok {
			continue
		}
		sub := nfkcView(string(uv.text))
		for _, m := range findKnown(&sub, sets, depth+1, nil) {
			m.start, m.end = uv.source(m.start, m.end)
			m.start, m.end = nv.source(m.start, m.end)
			out = append(out, m)
		}
	}
	d := decodeRuns(f.compact.text)
	if len(d.buf) == 0 {
		return out
	}
	dv := nfkcView(string(d.buf))
	for _, m := range findKnown(&dv, sets, depth+1, nil) {
		cs, ce, ok := d.source(m.start, m.end)
		if !ok {
			continue
		}
		m.start, m.end = f.compact.source(cs, ce)
		out = append(out, m)
	}
	return out
}
