package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/bcode-dev/bcode/server/lsp"
)

// Decode reads the params of method (a bcode/* request or a command's
// argument) into v, a pointer to a struct. Absent params, null, {} and []
// all mean "no params", and a one-element array holding the object (or
// null, or []) is read as that object (JSON-RPC's by-position form, which
// vscode-jsonrpc uses for a lone argument that is not an object), so a method with no
// required params accepts what every client sends for "nothing". Anything
// else that does not fit is an InvalidParams error naming the field and
// what it must be; the field's name is also in the error's data
// ({"field": "..."}) for clients that want to point at it.
func Decode(method string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0, string(raw) == "null", string(raw) == "[]":
		raw = json.RawMessage("{}")
	case raw[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return FieldError(method, "", "params must be an object, got malformed JSON: %v", err)
		}
		if len(items) == 0 {
			return Decode(method, nil, v)
		}
		if len(items) != 1 {
			return FieldError(method, "", "params must be an object (or an array holding one object), got an array of %d values", len(items))
		}
		raw = bytes.TrimSpace(items[0])
		if string(raw) == "null" || string(raw) == "[]" {
			// vscode-jsonrpc sends a lone null or [] argument by position.
			raw = json.RawMessage("{}")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return FieldError(method, "", "params must be one JSON object, got more after it")
		}
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return FieldError(method, "", "params must be an object%s, got %s", fieldsOf(v), article(te.Value))
		}
		return FieldError(method, te.Field, "%s must be %s, got %s", te.Field, kindOf(te.Type), article(te.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field := strings.Trim(name, `"`)
		return FieldError(method, field, "unknown field %s: %s takes%s", name, method, fieldsOrNone(v))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return FieldError(method, "", "params are not valid JSON at byte %d: %v", se.Offset, err)
	}
	return FieldError(method, "", "malformed params %s: %v", clip(raw), err)
}

// FieldError is an InvalidParams error of method about field ("" for the
// params as a whole), with the field in its data.
func FieldError(method, field, format string, args ...any) *lsp.Error {
	e := lsp.Errorf(lsp.CodeInvalidParams, "%s: %s", method, fmt.Sprintf(format, args...))
	if field != "" {
		e.Data, _ = json.Marshal(map[string]string{"field": field})
	}
	return e
}

// Required is the error for a required field left out or empty.
func Required(method, field, what string) *lsp.Error {
	return FieldError(method, field, "%s is required: %s", field, what)
}

// fieldsOf lists the JSON fields of the struct v points to, for messages.
func fieldsOf(v any) string {
	names := jsonFields(v)
	if len(names) == 0 {
		return ""
	}
	return " with the fields " + strings.Join(names, ", ")
}

func fieldsOrNone(v any) string {
	names := jsonFields(v)
	if len(names) == 0 {
		return " no params"
	}
	return " only " + strings.Join(names, ", ")
}

func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// kindOf says in JSON's words what a Go type accepts.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(kindOf(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// article turns encoding/json's value names ("number", "string", "number
// -1") into words for a message.
func article(v string) string {
	switch {
	case v == "":
		return "something else"
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"):
		return "an " + v
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return "a " + v
}
