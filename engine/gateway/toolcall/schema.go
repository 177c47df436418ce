// Package toolcall turns what a model emits into tool calls the agent can
// run, and refuses anything it cannot run whole: native OpenAI-style
// tool_calls, and the text forms models trained on them fall back to when
// the server's chat template has no tool support — Qwen/Hermes'
// <tool_call>{json}</tool_call> and the XML function-call form
// <function=name><parameter=x>…</parameter></function>. Arguments are
// checked against the tool's JSON Schema before anything executes; a call
// that fails is returned with an Error the model gets back instead.
package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Schema is the subset of JSON Schema tool parameters use: types,
// properties, required, enum, items and additionalProperties: false.
// Keywords outside it are ignored, never guessed at.
type Schema struct {
	Type                 schemaType         `json:"type,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
}

// schemaType is "type": one name or a list of names.
type schemaType []string

func (t *schemaType) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = schemaType{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("schema type must be a string or a list of strings")
	}
	*t = many
	return nil
}

func (t schemaType) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

var knownTypes = []string{"object", "array", "string", "integer", "number", "boolean", "null"}

// CompileSchema parses a tool's parameter schema.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &Schema{Type: schemaType{"object"}}, nil
	}
	var s Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("tool schema: %w", err)
	}
	if err := s.check("parameters"); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Schema) check(at string) error {
	for _, t := range s.Type {
		if !slices.Contains(knownTypes, t) {
			return fmt.Errorf("tool schema: %s: unknown type %q", at, t)
		}
	}
	for name, p := range s.Properties {
		if p == nil {
			return fmt.Errorf("tool schema: %s.%s: null schema", at, name)
		}
		if err := p.check(at + "." + name); err != nil {
			return err
		}
	}
	if s.Items != nil {
		return s.Items.check(at + "[]")
	}
	return nil
}

// Validate checks args (a JSON value) against s and returns every problem
// found, in words the model can act on.
func (s *Schema) Validate(args json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("arguments have trailing data after the JSON value")
	}
	var problems []string
	s.validate("arguments", v, &problems)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && !strings.ContainsAny(string(x), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func (s *Schema) validate(at string, v any, problems *[]string) {
	if len(*problems) >= 20 {
		return
	}
	got := typeOf(v)
	if len(s.Type) > 0 {
		ok := slices.Contains(s.Type, got) || (got == "integer" && slices.Contains(s.Type, "number"))
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s must be %s, got %s", at, strings.Join(s.Type, " or "), got))
			return
		}
	}
	if len(s.Enum) > 0 {
		found := false
		for _, e := range s.Enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
				break
			}
		}
		if !found {
			*problems = append(*problems, fmt.Sprintf("%s must be one of %v, got %v", at, s.Enum, v))
		}
	}
	if s.Minimum != nil {
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil && f < *s.Minimum {
				*problems = append(*problems, fmt.Sprintf("%s must be at least %v, got %v", at, *s.Minimum, f))
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				*problems = append(*problems, fmt.Sprintf("%s is missing required %q", at, r))
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					*problems = append(*problems, fmt.Sprintf("%s has unknown property %q (allowed: %s)", at, k, strings.Join(s.propertyNames(), ", ")))
				}
				continue
			}
			p.validate(at+"."+k, x[k], problems)
		}
	case []any:
		if s.Items != nil {
			for i, e := range x {
				s.Items.validate(fmt.Sprintf("%s[%d]", at, i), e, problems)
			}
		}
	}
}

func (s *Schema) propertyNames() []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
