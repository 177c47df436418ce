package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/verify/secrets"
)

// What leaves for the model is decided in one place: outboundTransport,
// the HTTP transport under every backend's client, sees each request's
// body after the backend has built it and before a byte of it is sent.
// It parses the body as JSON and redacts every string in it, object keys,
// roles, ids and names included, scanned together as one text (so a secret
// cut across two messages or two fields is still one secret), with the
// session's Redactor: every canary of the task, every secret found earlier
// in the task, gitleaks' rules, host paths. A secret in free text (a
// message's content, a tool call's arguments, a description) is replaced;
// one anywhere else (a role, an id, a name, a key, a schema's type) cannot
// be replaced without changing what the request means, so the request is
// refused and never sent (RefusedError).

// ErrRefused: a request held a secret where it cannot be redacted.
var ErrRefused = errors.New("gateway: request refused")

// RefusedError names where the secret was, never the secret.
type RefusedError struct {
	// Where is the JSON path of the string ("messages[2].tool_call_id").
	Where string
	// Rule is what found it (known-secret, host-path, a gitleaks rule).
	Rule string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("gateway: refused to send the request to the model: a secret (%s) is in %s, where it cannot be redacted without changing the request; nothing was sent", e.Rule, e.Where)
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ErrUnguarded: a request with a body left for the model outside a session
// (no Redactor in its context): refused, since nothing decides what may go.
var ErrUnguarded = errors.New("gateway: a request to the model carried no session's redactor; refused")

// maxRequest bounds a request body the transport reads.
const maxRequest = 64 << 20

// freeText are the keys whose string values are prose the model reads:
// a secret in them is replaced by a marker and the request stays valid.
// Every other string is structure (roles, ids, names, types, keys) and a
// secret there refuses the request.
var freeText = map[string]bool{
	"content": true, "text": true, "description": true, "system": true, "title": true, "arguments": true,
}

// freeSubtree are the keys under which every string, keys included, is
// the content of a tool call (Anthropic's input object, OpenAI's parsed
// arguments).
var freeSubtree = map[string]bool{"input": true}

// guardKey carries a session's requestGuard in a request's context.
type guardKey struct{}

// requestGuard is one model call's redaction: the session's Redactor and
// what it changed.
type requestGuard struct {
	red     *Redactor
	changes int
}

// withGuard is ctx carrying red for the requests made under it.
func withGuard(ctx context.Context, red *Redactor) (context.Context, *requestGuard) {
	g := &requestGuard{red: red}
	return context.WithValue(ctx, guardKey{}, g), g
}

// outboundTransport is the choke point (see above).
type outboundTransport struct {
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t outboundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		// A bodiless GET (/props, /health) carries nothing of the task.
		return t.next.RoundTrip(req)
	}
	defer req.Body.Close()
	g, _ := req.Context().Value(guardKey{}).(*requestGuard)
	if g == nil || g.red == nil {
		return nil, ErrUnguarded
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRequest+1))
	if err != nil {
		return nil, fmt.Errorf("gateway: reading the request body: %w", err)
	}
	if len(body) > maxRequest {
		return nil, fmt.Errorf("gateway: a request of over %d bytes: refused", maxRequest)
	}
	out, n, err := g.red.RedactRequest(body)
	if err != nil {
		return nil, err
	}
	g.changes += n
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	r.ContentLength = int64(len(out))
	return t.next.RoundTrip(r)
}

// guardClient returns a copy of c (nil: a client with timeout) whose
// transport passes every request through outboundTransport.
func guardClient(c *http.Client, timeout time.Duration) *http.Client {
	cp := http.Client{Timeout: timeout}
	if c != nil {
		cp = *c
	}
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	if _, ok := next.(outboundTransport); !ok {
		cp.Transport = outboundTransport{next: next}
	}
	return &cp
}

// jsonValue is a JSON value with its objects' key order kept, so what is
// sent is the request as built, but for the redacted strings.
type jsonValue struct {
	kind  byte // '{', '[', 's' (string), 'l' (number, true, false, null)
	text  string
	keys  []string
	elems []*jsonValue
	// inner is a string's content parsed, for a tool call's arguments
	// (a JSON text inside a string): it is redacted as JSON and written
	// back into the string.
	inner *jsonValue
}

func parseJSON(b []byte) (*jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (*jsonValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		v := &jsonValue{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				ks, ok := k.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v.keys = append(v.keys, ks)
			}
			e, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return v, nil
	case string:
		return &jsonValue{kind: 's', text: t}, nil
	case json.Number:
		return &jsonValue{kind: 'l', text: t.String()}, nil
	case bool:
		return &jsonValue{kind: 'l', text: fmt.Sprint(t)}, nil
	case nil:
		return &jsonValue{kind: 'l', text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func (v *jsonValue) write(b *bytes.Buffer) {
	switch v.kind {
	case 's':
		if v.inner != nil {
			var in bytes.Buffer
			v.inner.write(&in)
			writeJSONString(b, in.String())
			return
		}
		writeJSONString(b, v.text)
	case 'l':
		b.WriteString(v.text)
	case '{', '[':
		b.WriteByte(v.kind)
		for i, e := range v.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if v.kind == '{' {
				writeJSONString(b, v.keys[i])
				b.WriteByte(':')
			}
			e.write(b)
		}
		if v.kind == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}

// slot is one string of a request: an object key or a string value.
type slot struct {
	s    *string
	path string
	free bool
	// off is where the string starts in the joined text.
	off int
}

// collect lists every string under v in document order. key is the
// nearest object key above v; free is set inside a free subtree.
func collect(v *jsonValue, path, key string, free bool, out []slot) []slot {
	switch v.kind {
	case '{':
		for i := range v.keys {
			p := path + "." + v.keys[i]
			out = append(out, slot{s: &v.keys[i], path: p + " (a key)", free: free})
			out = collect(v.elems[i], p, v.keys[i], free || freeSubtree[v.keys[i]], out)
		}
	case '[':
		for i, e := range v.elems {
			out = collect(e, fmt.Sprintf("%s[%d]", path, i), key, free, out)
		}
	case 's':
		if key == "arguments" {
			if in, err := parseJSON([]byte(v.text)); err == nil && (in.kind == '{' || in.kind == '[') {
				v.inner = in
				return collect(in, path+"(arguments)", "", true, out)
			}
		}
		out = append(out, slot{s: &v.text, path: path, free: free || freeText[key]})
	}
	return out
}

// RedactRequest is the choke point's work on one request body (see the
// comment at the top of this file): it returns the body to send and how
// many things were replaced, or a *RefusedError. A body that is not JSON
// is redacted as text.
func (r *Redactor) RedactRequest(body []byte) ([]byte, int, error) {
	root, err := parseJSON(body)
	if err != nil {
		out, n := r.Redact(string(body))
		return []byte(out), n, nil
	}
	slots := collect(root, "$", "", false, nil)
	n, err := r.redactSlots(slots)
	if err != nil {
		return nil, 0, err
	}
	var b bytes.Buffer
	b.Grow(len(body))
	root.write(&b)
	return b.Bytes(), n, nil
}

// redactSlots replaces host paths in each string, then scans all of them
// joined as one text and replaces each span found in the strings it falls
// in; a span in a structural string refuses the request.
func (r *Redactor) redactSlots(slots []slot) (int, error) {
	n := 0
	for i := range slots {
		out, k := r.replacePaths(*slots[i].s)
		if k == 0 {
			continue
		}
		if !slots[i].free {
			return 0, &RefusedError{Where: slots[i].path, Rule: secrets.HostPathRule}
		}
		*slots[i].s, n = out, n+k
	}
	// Free strings are scanned joined (a secret cut across two of them is
	// one secret); structural ones joined too, but with a byte between
	// them that no match spans, so that the letters of a key ("content")
	// never complete a secret that begins in the text after it.
	var free, fixed []slot
	var freeAt []int
	for i, sl := range slots {
		if sl.free {
			free, freeAt = append(free, sl), append(freeAt, i)
		} else {
			fixed = append(fixed, sl)
		}
	}
	if _, spans := r.scanJoined(fixed, barrier); len(spans) > 0 {
		k := sort.Search(len(fixed), func(k int) bool { return fixed[k].off > spans[0].Start }) - 1
		return 0, &RefusedError{Where: fixed[max(k, 0)].path, Rule: spans[0].Rule}
	}
	_, spans := r.scanJoined(free, '\n')
	// Each slot's spans, in its own offsets.
	per := map[int][]secrets.Span{}
	for _, sp := range spans {
		k := sort.Search(len(free), func(k int) bool { return free[k].off > sp.Start }) - 1
		for ; k < len(free) && free[k].off < sp.End; k++ {
			s := free[k]
			end := s.off + len(*s.s)
			if sp.End <= s.off || sp.Start >= end {
				continue // only the separator
			}
			per[freeAt[k]] = append(per[freeAt[k]], secrets.Span{Start: max(sp.Start, s.off) - s.off, End: min(sp.End, end) - s.off, Rule: sp.Rule})
		}
	}

	for i, sps := range per {
		*slots[i].s = replaceSpans(*slots[i].s, sps)
		n += len(sps)
	}
	return n + stripSlots(slots), nil
}

// barrier separates structural strings in their joined text: invalid
// UTF-8, kept by every view of the normaliser, so no match spans it.
const barrier = 0xFF

// seamWindow is how far on each side of a boundary between two parts of
// a request the seam scan reads: more than any encoded secret the
// normaliser reads is long (a canary as HTML decimal references is about
// 170 bytes, as \u escapes about 200).
const seamWindow = 512

// scanJoined scans the slots' strings joined as one text (sep between
// each two) and returns the text and the spans found in it. The
// text is scanned in parts, each part's result cached by its content: the
// strings of one message (or one tool, or one top-level field) together,
// and around every boundary between parts a window of seamWindow bytes on
// each side, so a secret cut across parts is found whole. A conversation
// resent with one more message costs the new message and its seam.
func (r *Redactor) scanJoined(slots []slot, sep byte) (string, []secrets.Span) {
	var joined strings.Builder
	var starts []int // where each part begins
	prev := ""
	for i := range slots {
		if g := partOf(slots[i].path); i == 0 || g != prev {
			starts = append(starts, joined.Len())
			prev = g
		}
		slots[i].off = joined.Len()
		joined.WriteString(*slots[i].s)
		joined.WriteByte(sep)
	}
	text := joined.String()
	starts = append(starts, len(text))
	var spans []secrets.Span
	add := func(from, to int) {
		for _, sp := range r.findCached(text[from:to]) {
			sp.Start += from
			sp.End += from
			spans = append(spans, sp)
		}
	}
	for k := 0; k+1 < len(starts); k++ {
		add(starts[k], starts[k+1])
	}
	// Seams, each its own window (not merged: a merged run of windows
	// would change with every new message and be scanned again whole).
	for k := 1; k+1 < len(starts); k++ {
		add(max(0, starts[k]-seamWindow), min(len(text), starts[k]+seamWindow))
	}
	return text, spans
}

// partOf is the part of a request a string belongs to: the path up to its
// first array index ("$.messages[3]"), or the whole path.
func partOf(path string) string {
	if i := strings.IndexByte(path, ']'); i >= 0 {
		return path[:i+1]
	}
	return path
}

// stripSlots drops format characters and escapes from the free strings,
// as Redact does.
func stripSlots(slots []slot) int {
	n := 0
	for _, s := range slots {
		if !s.free {
			continue
		}
		out, k := secrets.StripInvisible(*s.s)
		*s.s, n = out, n+k
	}
	return n
}

// replaceSpans replaces each of spans (merged where they overlap) in text
// with its marker.
func replaceSpans(text string, spans []secrets.Span) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	var b strings.Builder
	pos := 0
	for i := 0; i < len(spans); {
		sp := spans[i]
		end := sp.End
		j := i + 1
		for ; j < len(spans) && spans[j].Start < end; j++ {
			end = max(end, spans[j].End)
		}
		if sp.Start > pos {
			b.WriteString(text[pos:sp.Start])
		}
		b.WriteString("[REDACTED:" + sp.Rule + "]")
		pos = max(pos, end)
		i = j
	}
	b.WriteString(text[pos:])
	return b.String()
}
