package secrets

import (
	"strings"
	"sync"
	"testing"
)

// fuzzSecrets are fixed, so a crasher replays: a canary (with a core
// NewCanary could have made), an environment secret and a host path.
var fuzzSecrets = sync.OnceValues(func() (*Scanner, []variant) {
	canary := CanaryPrefix + "q7m2xk4pd5hz3wt6rn2vy7bc4f"
	core, _ := CanaryCore(canary)
	env := "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY000000000007a3c91"
	path := "/home/alice-b5x/.local/state/bcode"
	s, err := NewScannerKnown(Known{Values: []string{canary, env}, Paths: []string{path}})
	if err != nil {
		panic(err)
	}
	var vs []variant
	for _, v := range leakVariants(canary, core, env, path, fakeAWSKey()) {
		// Rule-based detection depends on the text around a key (a rule
		// wants "aws_access_key_id ="); the property is about known values.
		if v.lead == "" {
			vs = append(vs, v)
		}
	}
	vs = append(vs, variant{"canary", canary, ""}, variant{"core", core, ""}, variant{"env secret", env, ""}, variant{"path", path, ""})
	return s, vs
})

// FuzzRedactKnown puts one listed variant of a known value (see
// leakVariants: normalised, folded, reversed, encoded at any offset)
// between arbitrary text and redacts. Whatever surrounds it, the output
// holds no listed variant's visible characters, and the spans the
// normaliser maps back never run outside the text (a panic otherwise).
func FuzzRedactKnown(f *testing.F) {
	for i, seed := range []struct{ before, after string }{
		{"", ""},
		{"$ echo ", "\n"},
		{"QUJD", "=="},
		{"0x", "ff"},
		{"\u0301", "\u0301\u200d"},
		{"\x1b[31m", "\x1b]0;title\x07"},
		{"abc\u2060", "\u2060xyz"},
		{"ＡＢ", "ｃｄ"},
	} {
		f.Add(seed.before, seed.after, uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, before, after string, which uint8) {
		s, vs := fuzzSecrets()
		v := vs[int(which)%len(vs)]
		text := before + v.payload + after
		out, _ := s.Redact(text)
		for _, w := range vs {
			visible, _ := StripInvisible(w.payload)
			if strings.Contains(out, w.payload) || strings.Contains(out, visible) {
				t.Fatalf("variant %q survived with %q before and %q after %q:\n%q", w.name, before, after, v.name, out)
			}
		}
	})
}
