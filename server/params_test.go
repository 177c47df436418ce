package server_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TestNoParamsForms: a custom method with no required params takes every
// way a client says "no params": absent, null, {} and [].
func TestNoParamsForms(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	forms := map[string]json.RawMessage{"absent": nil, "null": json.RawMessage("null"), "{}": json.RawMessage("{}"), "[]": json.RawMessage("[]"), "[{}]": json.RawMessage("[{}]")}
	for _, method := range []string{server.MethodTasks, server.MethodEvidence, server.MethodContextPack, server.MethodHealth} {
		for name, raw := range forms {
			t.Run(method+" "+name, func(t *testing.T) {
				var params any = raw
				if raw == nil {
					params = nil // ClientConn sends "params": null then; see below for none at all
				}
				var res map[string]any
				if err := e.Conn.Call(ctx, method, params, &res); err != nil {
					t.Fatalf("%s with params %s: %v", method, name, err)
				}
				if len(res) == 0 {
					t.Errorf("%s answered nothing", method)
				}
			})
		}
	}
}

// TestBadParams: every bad input to a custom method is an InvalidParams
// error naming the field (in the message and in data.field), never a
// panic or an internal error, and the server keeps serving.
func TestBadParams(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name, method string
		params       json.RawMessage
		field, says  string
	}{
		{"tasks: unknown field", server.MethodTasks, raw(`{"repo":"x"}`), "repo", `unknown field "repo": bcode/tasks takes no params`},
		{"tasks: a number", server.MethodTasks, raw(`5`), "", "params must be an object, got a number"},
		{"tasks: a string", server.MethodTasks, raw(`"all"`), "", "params must be an object, got a string"},
		{"tasks: two objects", server.MethodTasks, raw(`[{},{}]`), "", "an array of 2 values"},
		{"tasks: an array of a number", server.MethodTasks, raw(`[1]`), "", "params must be an object, got a number"},
		{"task: no params", server.MethodTask, nil, "id", "id is required"},
		{"task: empty", server.MethodTask, raw(`[]`), "id", "id is required"},
		{"task: empty id", server.MethodTask, raw(`{"id":""}`), "id", "id is required"},
		{"task: id a number", server.MethodTask, raw(`{"id":5}`), "id", "id must be a string, got a number"},
		{"task: id an object", server.MethodTask, raw(`{"id":{}}`), "id", "id must be a string, got an object"},
		{"task: eventsLimit a string", server.MethodTask, raw(`{"id":"t","eventsLimit":"5"}`), "eventsLimit", "eventsLimit must be an integer, got a string"},
		{"task: eventsLimit a fraction", server.MethodTask, raw(`{"id":"t","eventsLimit":2.5}`), "eventsLimit", "eventsLimit must be an integer"},
		{"task: eventsLimit negative", server.MethodTask, raw(`{"id":"t","eventsLimit":-1}`), "eventsLimit", "between 0"},
		{"task: eventsLimit huge", server.MethodTask, raw(`{"id":"t","eventsLimit":100000000}`), "eventsLimit", "between 0"},
		{"task: eventsAfter negative", server.MethodTask, raw(`{"id":"t","eventsAfter":-3}`), "eventsAfter", "sequence number"},
		{"task: unknown field", server.MethodTask, raw(`{"id":"t","limit":5}`), "limit", "takes only id, eventsLimit, eventsAfter"},
		{"taskDiff: no id", server.MethodTaskDiff, raw(`{}`), "id", "id is required"},
		{"taskDiff: path a list", server.MethodTaskDiff, raw(`{"id":"t","path":["a"]}`), "path", "path must be a string, got an array"},
		{"taskDiff: path with ..", server.MethodTaskDiff, raw(`{"id":"t","path":"a/../../b"}`), "path", "leaves the tree"},
		{"taskDiff: path .git", server.MethodTaskDiff, raw(`{"id":"t","path":".git/config"}`), "path", ".git component"},
		{"contextPack: budget a string", server.MethodContextPack, raw(`{"budget":"lots"}`), "budget", "budget must be an integer, got a string"},
		{"contextPack: negative budget", server.MethodContextPack, raw(`{"budget":-10}`), "budget", "number of tokens"},
		{"contextPack: range without uri", server.MethodContextPack, raw(`{"range":{"start":{"line":1,"character":0},"end":{"line":2,"character":0}}}`), "range", "needs the uri"},
		{"contextPack: range line negative", server.MethodContextPack, raw(`{"uri":"file:///x","range":{"start":{"line":-1,"character":0},"end":{"line":2,"character":0}}}`), "range.start.line", "range.start.line must be a non-negative integer, got the number -1"},
		{"contextPack: criteria", server.MethodContextPack, raw(`{"criteria":[]}`), "criteria", "unknown field"},
		{"evidence: wait a string", server.MethodEvidence, raw(`{"wait":"yes"}`), "wait", "wait must be true or false, got a string"},
		{"documentContent: no uri", server.MethodDocumentContent, raw(`null`), "uri", "uri is required"},
		{"documentContent: uri a number", server.MethodDocumentContent, raw(`{"uri":1}`), "uri", "uri must be a string, got a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var params any = c.params
			if c.params == nil {
				params = nil
			}
			err := e.Conn.Call(ctx, c.method, params, nil)
			var le *lsp.Error
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want an InvalidParams error", err)
			}
			if le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, c.says) || !strings.HasPrefix(le.Message, c.method+": ") {
				t.Errorf("got code %d %q, want InvalidParams from %s saying %q", le.Code, le.Message, c.method, c.says)
			}
			var data struct {
				Field string `json:"field"`
			}
			if c.field != "" && (json.Unmarshal(le.Data, &data) != nil || data.Field != c.field) {
				t.Errorf("error data %s, want field %q", le.Data, c.field)
			}
		})
	}

	// Junk of every JSON shape, at every method: an error a user can read,
	// never an internal error (a panic would be one).
	junk := []string{`0`, `-1`, `1e309`, `true`, `"x"`, `[[]]`, `[null]`, `[1,2]`, `{"id":null}`, `{"id":[]}`, `{"id":"` + strings.Repeat("x", 5000) + `"}`,
		`{"id":"t","path":""}`, `{"id":"t","path":"\u0000"}`, `{"uri":""}`, `{"uri":"bcode-pack:"}`, `{"budget":1e12}`, `{"eventsLimit":null}`, `{"":1}`}
	for _, method := range []string{server.MethodTasks, server.MethodTask, server.MethodTaskDiff, server.MethodContextPack, server.MethodEvidence, server.MethodDocumentContent, server.MethodHealth} {
		for _, j := range junk {
			err := e.Conn.Call(ctx, method, json.RawMessage(j), nil)
			var le *lsp.Error
			if err != nil && !errors.As(err, &le) {
				t.Errorf("%s %.40s: transport error %v", method, j, err)
				continue
			}
			if le != nil && (le.Code == lsp.CodeInternalError || le.Message == "") {
				t.Errorf("%s %.40s: %v", method, j, le)
			}
		}
	}
	var tasks server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &tasks); err != nil {
		t.Fatalf("the server stopped serving after bad params: %v", err)
	}
}
