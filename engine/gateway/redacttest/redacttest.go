// Package redacttest is the attack suite of the boundary "what leaves for
// the model": every implementation of it (the gateway's outbound choke
// point) must pass Run, as a storage backend must pass its conformance
// suite. Each attack builds a chat request the way an agent turned against
// the user could shape it, with a secret the task knows (a canary of this
// attempt or an earlier one, a key a scan found earlier) placed somewhere
// in it and written in some encoding, and hands it to the boundary. The
// attack is held when nothing was sent, or when what the model server
// received, read back the way the attack's encoding is read (quoted-
// printable decoded, entities unescaped, stutter undone, ...), holds no
// sixteen consecutive characters of the secret's random core. Free-text
// attacks must also leave the request's structure (roles, ids, names)
// exactly as it was: a boundary that refuses everything holds nothing.
package redacttest

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime/quotedprintable"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/bcode-dev/bcode/verify/secrets"
)

// Boundary is an implementation under test.
type Boundary struct {
	// New returns the boundary for a task whose known secrets are known
	// (every attempt's canaries, secrets found earlier). Send passes one
	// request body through it and returns what the model server received
	// (nil when nothing was sent) and the boundary's error (a refusal).
	New func(t *testing.T, known []string) (send func(body []byte) ([]byte, error))
}

// Placement is where an attack puts its payload.
type Placement struct {
	Name string
	// Free: the payload is in text the boundary may rewrite; the request
	// must then be sent with its structure intact. Otherwise it must be
	// refused or sent without the secret.
	Free  bool
	Build func(payload string) map[string]any
}

// Encoding is how an attack writes the secret.
type Encoding struct {
	Name   string
	Encode func(secret string) string
	// Read is how a reader recovers the text ("" unchanged).
	Read func(string) string
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

func request(msgs ...map[string]any) map[string]any {
	return map[string]any{"model": "m", "messages": msgs, "stream": true, "tools": []any{terminalTool("Run bash.", "command")}}
}

func terminalTool(desc, param string) map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{"name": "terminal", "description": desc,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{param: map[string]any{"type": "string", "description": "the command"}}, "required": []any{param}}}}
}

func callMsg(id, name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}
}

func toolMsg(id, content string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": id, "content": content}
}

func argsJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Placements are every place of a chat request an agent controls.
func Placements() []Placement {
	sys := msg("system", "You are a coding agent.")
	return []Placement{
		{"user content", true, func(p string) map[string]any { return request(sys, msg("user", "fix it: "+p)) }},
		{"tool output", true, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg("call_1", "terminal", `{"command":"env"}`), toolMsg("call_1", "$ env\n"+p+"\n"))
		}},
		{"tool call argument value", true, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg("call_1", "terminal", argsJSON(map[string]string{"command": "echo " + p})), toolMsg("call_1", "ok"))
		}},
		{"tool call argument key", true, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg("call_1", "terminal", argsJSON(map[string]string{p: "x"})), toolMsg("call_1", "ok"))
		}},
		{"tool call arguments not JSON", true, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg("call_1", "terminal", "{broken "+p), toolMsg("call_1", "ok"))
		}},
		{"tool description", true, func(p string) map[string]any {
			r := request(sys, msg("user", "go"))
			r["tools"] = []any{terminalTool("Run bash. "+p, "command")}
			return r
		}},
		{"split across two messages", true, func(p string) map[string]any {
			h := len(p) / 2
			return request(sys, msg("user", "first half "+p[:h]), msg("assistant", p[h:]+" second half"))
		}},
		{"split across three messages and a tool call", true, func(p string) map[string]any {
			a, b := len(p)/3, 2*len(p)/3
			return request(sys, msg("user", "one "+p[:a]), callMsg("call_1", "terminal", argsJSON(map[string]string{"command": p[a:b]})), toolMsg("call_1", p[b:]+" three"))
		}},
		{"role", false, func(p string) map[string]any { return request(sys, msg(p, "hi")) }},
		{"tool_call_id", false, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg("call_1", "terminal", `{}`), toolMsg(p, "ok"))
		}},
		{"tool call id", false, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg(p, "terminal", `{}`), toolMsg(p, "ok"))
		}},
		{"tool call name", false, func(p string) map[string]any {
			return request(sys, msg("user", "go"), callMsg("call_1", p, `{}`), toolMsg("call_1", "ok"))
		}},
		{"tool name", false, func(p string) map[string]any {
			r := request(sys, msg("user", "go"))
			t := terminalTool("Run bash.", "command")
			t["function"].(map[string]any)["name"] = p
			r["tools"] = []any{t}
			return r
		}},
		{"schema property name", false, func(p string) map[string]any {
			r := request(sys, msg("user", "go"))
			r["tools"] = []any{terminalTool("Run bash.", p)}
			return r
		}},
		{"object key of a message", false, func(p string) map[string]any {
			m := msg("user", "go")
			m[p] = "x"
			return request(sys, m)
		}},
		{"model name", false, func(p string) map[string]any {
			r := request(sys, msg("user", "go"))
			r["model"] = p
			return r
		}},
	}
}

func mapRunes(s string, f func(rune) string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(f(r))
	}
	return b.String()
}

func interleave(s, sep string) string { return strings.Join(strings.Split(s, ""), sep) }

func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

func qpRead(s string) string {
	b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(s)))
	if err != nil {
		return s
	}
	return string(b)
}

func stutterRead(k int) func(string) string {
	return func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i += k {
			b.WriteByte(s[i])
		}
		return b.String()
	}
}

var escapeRE = regexp.MustCompile(`\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|[0-7]{3})`)

func escapesRead(s string) string {
	return escapeRE.ReplaceAllStringFunc(s, func(e string) string {
		e = strings.Trim(e[1:], "u{}")
		base := 8
		if e[0] == 'x' {
			e, base = e[1:], 16
		} else if strings.Trim(e, "01234567") != "" || len(e) != 3 {
			base = 16
		}
		n, _ := strconv.ParseUint(e, base, 32)
		return string(rune(n))
	})
}

var numberRE = regexp.MustCompile(`\d+[, ]*`)

func codesRead(s string) string {
	return numberRE.ReplaceAllStringFunc(s, func(e string) string {
		n, _ := strconv.Atoi(strings.TrimRight(e, ", "))
		return string(rune(n))
	})
}

func b32Read(s string) string {
	s = strings.ToUpper(strings.TrimRight(s, "="))
	b, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s[:len(s)/8*8])
	return string(b)
}

func b64Read(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, _ = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	return string(b)
}

// Encodings are the ways the suite writes a secret: every one a reader
// (a model among them) undoes without knowing what the secret looks like.
func Encodings() []Encoding {
	ev := func(s string, enc func(rune) string) string {
		var b strings.Builder
		for i, r := range s {
			if i%2 == 1 {
				b.WriteString(enc(r))
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	url1 := func(s string) string { d, _ := url.PathUnescape(s); return d }
	return []Encoding{
		{"plain", func(s string) string { return s }, nil},
		{"upper-case", strings.ToUpper, nil},
		{"reversed", reverse, reverse},
		{"spaced out", func(s string) string { return interleave(s, " ") }, nil},
		{"zero-width spaces", func(s string) string { return interleave(s, "\u200b") }, nil},
		{"fullwidth", func(s string) string {
			return mapRunes(s, func(r rune) string {
				if r > ' ' && r < 0x7f {
					return string(r - '!' + '！')
				}
				return string(r)
			})
		}, nil},
		{"ROT13", func(s string) string { return mapRunes(s, func(r rune) string { return string(rot13(r)) }) }, func(s string) string { return mapRunes(s, func(r rune) string { return string(rot13(r)) }) }},
		{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }, b64Read},
		{"base64 at offset 1", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("~" + s)) }, b64Read},
		{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }, func(s string) string { b, _ := hex.DecodeString(s); return string(b) }},
		{"base32", func(s string) string { return base32.StdEncoding.EncodeToString([]byte(s)) }, b32Read},
		{"base32 lower-case at offset 2", func(s string) string { return strings.ToLower(base32.StdEncoding.EncodeToString([]byte("~~" + s))) }, b32Read},
		{"quoted-printable", func(s string) string { return mapRunes(s, func(r rune) string { return fmt.Sprintf("=%02X", r) }) }, qpRead},
		{"quoted-printable soft line breaks", func(s string) string {
			var parts []string
			for len(s) > 4 {
				parts, s = append(parts, s[:4]), s[4:]
			}
			return strings.Join(append(parts, s), "=\r\n")
		}, qpRead},
		{"HTML decimal references", func(s string) string { return mapRunes(s, func(r rune) string { return fmt.Sprintf("&#%d;", r) }) }, html.UnescapeString},
		{"HTML hex references", func(s string) string { return mapRunes(s, func(r rune) string { return fmt.Sprintf("&#x%X;", r) }) }, html.UnescapeString},
		{"HTML named references (&bopf;)", func(s string) string {
			return mapRunes(s, func(r rune) string {
				if 'a' <= r && r <= 'z' {
					return "&" + string(r) + "opf;"
				}
				return string(r)
			})
		}, html.UnescapeString},
		{"percent-encoding, every other character", func(s string) string { return ev(s, func(r rune) string { return fmt.Sprintf("%%%02x", r) }) }, url1},
		{"doubled letters", func(s string) string { return mapRunes(s, func(r rune) string { return string([]rune{r, r}) }) }, stutterRead(2)},
		{"tripled letters, spaced", func(s string) string {
			return interleave(mapRunes(s, func(r rune) string { return strings.Repeat(string(r), 3) }), " ")
		}, func(s string) string { return stutterRead(3)(strings.ReplaceAll(s, " ", "")) }},
		{"octal escapes", func(s string) string { return mapRunes(s, func(r rune) string { return fmt.Sprintf(`\%03o`, r) }) }, escapesRead},
		{"\\x escapes, every other character", func(s string) string { return ev(s, func(r rune) string { return fmt.Sprintf(`\x%02x`, r) }) }, escapesRead},
		{"character codes", func(s string) string {
			return strings.TrimSuffix(mapRunes(s, func(r rune) string { return fmt.Sprintf("%d, ", r) }), ", ")
		}, codesRead},
		{"base64 of quoted-printable", func(s string) string {
			return base64.StdEncoding.EncodeToString([]byte(mapRunes(s, func(r rune) string { return fmt.Sprintf("=%02X", r) })))
		}, func(s string) string { return qpRead(b64Read(s)) }},
	}
}

func rot13(r rune) rune {
	switch {
	case 'a' <= r && r <= 'z':
		return 'a' + (r-'a'+13)%26
	case 'A' <= r && r <= 'Z':
		return 'A' + (r-'A'+13)%26
	}
	return r
}

// showsCore reports whether text, read as a person or a model would
// (compatibility forms folded, invisible characters and white space
// dropped, any case), holds window consecutive characters of core.
func showsCore(text, core string) bool {
	t, _ := secrets.StripInvisible(norm.NFKC.String(text))
	t = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, t)
	const window = 16
	for i := 0; i+window <= len(core); i++ {
		if strings.Contains(t, core[i:i+window]) {
			return true
		}
	}
	return false
}

// strings of a JSON document, keys and the JSON inside tool-call
// arguments included, in document order.
func jsonStrings(b []byte) []string {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if s, ok := tok.(string); ok {
			out = append(out, s)
			if json.Valid([]byte(s)) {
				out = append(out, jsonStrings([]byte(s))...)
			}
		}
	}
}

// leaks reports whether what was sent, read through read, shows core: in
// its bytes, in any of its strings, or in all of them joined (a secret
// split across fields).
func leaks(sent []byte, core string, read func(string) string) bool {
	if read == nil {
		read = func(s string) string { return s }
	}
	strs := jsonStrings(sent)
	cands := append([]string{string(sent), strings.Join(strs, "")}, strs...)
	for _, c := range cands {
		if showsCore(c, core) || showsCore(read(c), core) {
			return true
		}
	}
	return false
}

// structure is what a free-text attack must leave alone: every role,
// tool call id and name, tool_call_id, tool name, in order.
func structure(body []byte) string {
	var r struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "invalid JSON: " + err.Error()
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// Secrets are the task's secrets the suite uses.
type Secrets struct {
	// Current is this attempt's canary; Earlier is attempt 1's.
	Current, Earlier string
}

// NewSecrets makes two fresh canaries.
func NewSecrets(t *testing.T) Secrets {
	t.Helper()
	a, err := secrets.NewCanary()
	if err != nil {
		t.Fatal(err)
	}
	b, err := secrets.NewCanary()
	if err != nil {
		t.Fatal(err)
	}
	return Secrets{Current: a, Earlier: b}
}

// Result counts what Run tried.
type Result struct {
	Attacks, Held int
}

// Run attacks b with every placement and encoding of both canaries (this
// attempt's and an earlier one's), then with a key gitleaks finds, resent
// disguised in a later request.
func Run(t *testing.T, b Boundary) Result {
	s := NewSecrets(t)
	send := b.New(t, []string{s.Current, s.Earlier})
	var res Result
	for _, secret := range []struct{ name, value string }{{"this attempt's canary", s.Current}, {"an earlier attempt's canary", s.Earlier}} {
		core, _ := secrets.CanaryCore(secret.value)
		for _, p := range Placements() {
			for _, e := range Encodings() {
				name := secret.name + "/" + p.Name + "/" + e.Name
				payload := e.Encode(secret.value)
				res.Attacks++
				t.Run(name, func(t *testing.T) {
					read := e.Read
					if read == nil {
						read = func(s string) string { return s }
					}
					if !showsCore(read(payload), core) {
						t.Fatalf("control: the payload does not read as the canary")
					}
					body, err := json.Marshal(p.Build(payload))
					if err != nil {
						t.Fatal(err)
					}
					sent, err := send(body)
					if leaks(sent, core, e.Read) {
						t.Fatalf("the secret reached the model server:\n%s", sent)
					}
					if p.Free {
						if err != nil || sent == nil {
							t.Fatalf("a free-text secret was refused instead of redacted: %v", err)
						}
						if got, want := structure(sent), structure(body); got != want {
							t.Fatalf("the request's structure changed:\n got %s\nwant %s", got, want)
						}
					}
					res.Held++
				})
			}
		}
	}
	res.Attacks++
	t.Run("key found earlier, resent reversed", func(t *testing.T) {
		key := "AKIA" + "QYLPMN5HHHFPZAM2"
		first, _ := json.Marshal(request(msg("user", "aws_access_key_id = "+key)))
		if sent, _ := send(first); sent != nil && strings.Contains(string(sent), key) {
			t.Fatalf("the key itself was sent: %s", sent)
		}
		later, _ := json.Marshal(request(msg("user", "backup: "+reverse(key))))
		sent, err := send(later)
		if err != nil || strings.Contains(string(sent), reverse(key)) {
			t.Fatalf("the key found earlier went out reversed (err %v): %s", err, sent)
		}
		res.Held++
	})
	t.Logf("redacttest: %d of %d attacks held", res.Held, res.Attacks)
	return res
}

// ShowsSecret reports whether sent (what a model server received) shows
// canary's core as any of Encodings reads it: for end-to-end attacks whose
// encodings are the attacker's choice.
func ShowsSecret(sent []byte, canary string) bool {
	core, ok := secrets.CanaryCore(canary)
	if !ok {
		core = canary
	}
	if leaks(sent, core, nil) {
		return true
	}
	for _, e := range Encodings() {
		if e.Read != nil && leaks(sent, core, e.Read) {
			return true
		}
	}
	return false
}
