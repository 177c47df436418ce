package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Tool is what the parser needs of a tool: its name and argument schema.
type Tool struct {
	Name   string
	Schema *Schema
}

// Call is one parsed tool call. When Error is set the call must not run:
// Error goes back to the model as the call's result.
type Call struct {
	ID        string
	Name      string
	Arguments json.RawMessage
	Error     string
}

// Set is the tools of one session, by name.
type Set map[string]*Schema

// NewSet compiles each tool's schema.
func NewSet(tools []Tool) Set {
	s := Set{}
	for _, t := range tools {
		s[t.Name] = t.Schema
	}
	return s
}

func (s Set) names() string {
	var ns []string
	for n := range s {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return strings.Join(ns, ", ")
}

// Check validates a call in place: the tool exists and the arguments fit
// its schema. It returns c for chaining.
func (s Set) Check(c *Call) *Call {
	if c.Error != "" {
		return c
	}
	schema, ok := s[c.Name]
	if !ok {
		c.Error = fmt.Sprintf("unknown tool %q (available: %s)", c.Name, s.names())
		return c
	}
	if schema == nil {
		return c
	}
	if err := schema.Validate(c.Arguments); err != nil {
		c.Error = fmt.Sprintf("invalid arguments for %s: %v", c.Name, err)
	}
	return c
}

// NativeArguments reads the arguments of a native tool call: a JSON object
// encoded as a string (the OpenAI shape) or, from some servers, the object
// itself.
func NativeArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("arguments: %v", err)
		}
		raw = bytes.TrimSpace([]byte(s))
		if len(raw) == 0 {
			return json.RawMessage(`{}`), nil
		}
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, fmt.Errorf("arguments are not a JSON object: %s", clip(string(raw), 120))
	}
	return json.RawMessage(raw), nil
}

// Parse finds the tool calls in a model's text reply, in order, and returns
// them with the text around them. Recognised forms:
//
//	<tool_call>{"name": "...", "arguments": {...}}</tool_call>
//	<tool_call><function=name><parameter=x>value</parameter></function></tool_call>
//	<function=name><parameter=x>value</parameter></function>
//
// XML parameter values are text; each is converted to the type the tool's
// schema gives it (an integer, a boolean, a JSON object...). A block that is
// opened but not closed, or whose content does not parse, becomes a Call
// with Error set, never a partial call. Every call is checked against set.
func Parse(text string, set Set) (calls []Call, rest string) {
	var out strings.Builder
	i := 0
	for i < len(text) {
		tc := strings.Index(text[i:], "<tool_call>")
		fn := strings.Index(text[i:], "<function=")
		if tc < 0 && fn < 0 {
			out.WriteString(text[i:])
			break
		}
		if tc >= 0 && (fn < 0 || tc <= fn) {
			start := i + tc
			out.WriteString(text[i:start])
			body := start + len("<tool_call>")
			end := strings.Index(text[body:], "</tool_call>")
			if end < 0 {
				calls = append(calls, Call{Error: "unterminated <tool_call>: close it with </tool_call>; the call was not run"})
				break
			}
			c := parseToolCallBody(strings.TrimSpace(text[body:body+end]), set)
			calls = append(calls, c)
			i = body + end + len("</tool_call>")
			continue
		}
		start := i + fn
		out.WriteString(text[i:start])
		end := strings.Index(text[start:], "</function>")
		if end < 0 {
			calls = append(calls, Call{Error: "unterminated <function=...>: close it with </function>; the call was not run"})
			break
		}
		block := text[start : start+end+len("</function>")]
		calls = append(calls, parseFunctionXML(block, set))
		i = start + end + len("</function>")
	}
	for k := range calls {
		calls[k].ID = "call_" + strconv.Itoa(k+1)
		set.Check(&calls[k])
	}
	return calls, strings.TrimSpace(out.String())
}

func parseToolCallBody(body string, set Set) Call {
	if strings.HasPrefix(body, "<function=") {
		return parseFunctionXML(body, set)
	}
	var v struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return Call{Error: fmt.Sprintf("the <tool_call> body is not valid JSON (%v); write {\"name\": ..., \"arguments\": {...}}", err)}
	}
	if v.Name == "" {
		return Call{Error: "the <tool_call> body has no \"name\""}
	}
	args := v.Arguments
	if args == nil {
		args = v.Parameters
	}
	a, err := NativeArguments(args)
	if err != nil {
		return Call{Name: v.Name, Error: err.Error()}
	}
	return Call{Name: v.Name, Arguments: a}
}

// parseFunctionXML reads <function=name>…</function> (the closing tag
// included in block).
func parseFunctionXML(block string, set Set) Call {
	head := strings.TrimPrefix(block, "<function=")
	gt := strings.IndexByte(head, '>')
	if gt < 0 {
		return Call{Error: "malformed <function=name> tag"}
	}
	name := strings.TrimSpace(head[:gt])
	if name == "" || strings.ContainsAny(name, "<>\n\"' ") {
		return Call{Error: fmt.Sprintf("malformed tool name %q in <function=...>", clip(name, 60))}
	}
	body := strings.TrimSuffix(head[gt+1:], "</function>")
	params := map[string]string{}
	var order []string
	for {
		p := strings.Index(body, "<parameter=")
		if p < 0 {
			if strings.TrimSpace(body) != "" {
				return Call{Name: name, Error: fmt.Sprintf("unexpected text inside <function=%s>: %q", name, clip(strings.TrimSpace(body), 80))}
			}
			break
		}
		if strings.TrimSpace(body[:p]) != "" {
			return Call{Name: name, Error: fmt.Sprintf("unexpected text inside <function=%s>: %q", name, clip(strings.TrimSpace(body[:p]), 80))}
		}
		rest := body[p+len("<parameter="):]
		gt := strings.IndexByte(rest, '>')
		if gt < 0 {
			return Call{Name: name, Error: "malformed <parameter=name> tag"}
		}
		pname := strings.TrimSpace(rest[:gt])
		if pname == "" || strings.ContainsAny(pname, "<>\n") {
			return Call{Name: name, Error: fmt.Sprintf("malformed parameter name %q", clip(pname, 60))}
		}
		val := rest[gt+1:]
		end := strings.Index(val, "</parameter>")
		if end < 0 {
			return Call{Name: name, Error: fmt.Sprintf("parameter %q is not closed with </parameter>; the call was not run", pname)}
		}
		if _, dup := params[pname]; dup {
			return Call{Name: name, Error: fmt.Sprintf("parameter %q given twice", pname)}
		}
		params[pname] = trimOneNewline(val[:end])
		order = append(order, pname)
		body = val[end+len("</parameter>"):]
	}
	args, err := coerce(params, order, set[name])
	if err != nil {
		return Call{Name: name, Error: err.Error()}
	}
	return Call{Name: name, Arguments: args}
}

// trimOneNewline drops the single newline models put after <parameter=x>
// and before </parameter>, keeping every other byte: a str_replace anchor
// must stay exact.
func trimOneNewline(s string) string {
	s = strings.TrimPrefix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	return s
}

// coerce builds the JSON arguments object from text parameters, typing each
// by the schema: strings stay text, everything else is read as JSON.
func coerce(params map[string]string, order []string, schema *Schema) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range order {
		v := params[k]
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		var typ []string
		if schema != nil {
			if p := schema.Properties[k]; p != nil {
				typ = p.Type
			}
		}
		if len(typ) == 0 || slices.Contains(typ, "string") {
			vb, _ := json.Marshal(v)
			b.Write(vb)
			continue
		}
		tv := strings.TrimSpace(v)
		if !json.Valid([]byte(tv)) {
			return nil, fmt.Errorf("parameter %q must be %s, got %q", k, strings.Join(typ, " or "), clip(tv, 60))
		}
		b.WriteString(tv)
	}
	b.WriteByte('}')
	return json.RawMessage(b.Bytes()), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
