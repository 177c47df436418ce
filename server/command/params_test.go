package command

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/server/lsp"
)

// TestDecodeNoParams: absent, null, {}, [] and [{}] are all "no params";
// [obj] is obj (JSON-RPC's by-position form).
func TestDecodeNoParams(t *testing.T) {
	for _, raw := range []string{"", "  ", "null", "{}", "[]", " [ ] ", "[{}]", "[null]", "[[]]"} {
		var a PackArgs
		if err := Decode("m", json.RawMessage(raw), &a); err != nil || a.URI != "" || a.Budget != 0 {
			t.Errorf("%q: %+v %v", raw, a, err)
		}
	}
	var a TaskDiffArgs
	if err := Decode("m", json.RawMessage(`[{"id":"t1","path":"a.go"}]`), &a); err != nil || a != (TaskDiffArgs{ID: "t1", Path: "a.go"}) {
		t.Errorf("by position: %+v %v", a, err)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	cases := []struct{ raw, field, says string }{
		{`{"id":1}`, "id", "m: id must be a string, got a number"},
		{`{"id":"t","path":false}`, "path", "path must be a string, got a bool"},
		{`{"id":"t","nope":1}`, "nope", `unknown field "nope": m takes only id, path`},
		{`"t1"`, "", "params must be an object with the fields id, path, got a string"},
		{`[1,2,3]`, "", "an array of 3 values"},
		{`{"id":"t"} {}`, "", "got more after it"},
	}
	for _, c := range cases {
		var a TaskDiffArgs
		err := Decode("m", json.RawMessage(c.raw), &a)
		var le *lsp.Error
		if !errors.As(err, &le) || le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, c.says) {
			t.Errorf("%s: got %v, want InvalidParams saying %q", c.raw, err, c.says)
			continue
		}
		var data struct{ Field string }
		_ = json.Unmarshal(le.Data, &data)
		if data.Field != c.field {
			t.Errorf("%s: data %s, want field %q", c.raw, le.Data, c.field)
		}
	}
	// Nested fields by their path; unsigned fields say so.
	var p PackArgs
	err := Decode("m", json.RawMessage(`{"uri":"file:///a","range":{"start":{"line":-1,"character":0},"end":{"line":0,"character":0}}}`), &p)
	if err == nil || !strings.Contains(err.Error(), "range.start.line must be a non-negative integer, got the number -1") {
		t.Errorf("nested: %v", err)
	}
	var c TaskCreateArgs
	err = Decode("m", json.RawMessage(`{"goal":"g","criteria":"one"}`), &c)
	if err == nil || !strings.Contains(err.Error(), "criteria must be an array of strings, got a string") {
		t.Errorf("array: %v", err)
	}
}
