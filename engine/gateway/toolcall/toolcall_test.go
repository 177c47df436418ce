package toolcall

import (
	"encoding/json"
	"strings"
	"testing"
)

func testSet(t testing.TB) Set {
	t.Helper()
	mk := func(raw string) *Schema {
		s, err := CompileSchema(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return Set{
		"terminal":    mk(`{"type":"object","properties":{"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1}},"required":["command"],"additionalProperties":false}`),
		"file_editor": mk(`{"type":"object","properties":{"command":{"type":"string","enum":["view","create","str_replace","insert","undo_edit"]},"path":{"type":"string"},"old_str":{"type":"string"},"new_str":{"type":"string"},"insert_line":{"type":"integer"},"view_range":{"type":"array","items":{"type":"integer"}}},"required":["command","path"],"additionalProperties":false}`),
		"finish":      mk(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`),
	}
}

func TestParseXMLFunctionForm(t *testing.T) {
	text := "I'll fix the loop.\n<tool_call>\n<function=file_editor>\n<parameter=command>\nstr_replace\n</parameter>\n<parameter=path>\nsum.go\n</parameter>\n<parameter=old_str>\n\tfor i := 1; i < len(xs); i++ {\n</parameter>\n<parameter=new_str>\n\tfor i := 0; i < len(xs); i++ {\n</parameter>\n</function>\n</tool_call>"
	calls, rest := Parse(text, testSet(t))
	if len(calls) != 1 {
		t.Fatalf("got %d calls", len(calls))
	}
	c := calls[0]
	if c.Error != "" {
		t.Fatalf("error: %s", c.Error)
	}
	var args map[string]string
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		t.Fatal(err)
	}
	if args["old_str"] != "\tfor i := 1; i < len(xs); i++ {" || args["path"] != "sum.go" || args["command"] != "str_replace" {
		t.Errorf("args %q", args)
	}
	if rest != "I'll fix the loop." {
		t.Errorf("rest %q", rest)
	}
	if c.ID != "call_1" {
		t.Errorf("id %q", c.ID)
	}
}

func TestParseTypesXMLParameters(t *testing.T) {
	calls, _ := Parse("<function=terminal><parameter=command>go test ./...</parameter><parameter=timeout_seconds>120</parameter></function>", testSet(t))
	if len(calls) != 1 || calls[0].Error != "" {
		t.Fatalf("%+v", calls)
	}
	if string(calls[0].Arguments) != `{"command":"go test ./...","timeout_seconds":120}` {
		t.Errorf("args %s", calls[0].Arguments)
	}
	calls, _ = Parse("<function=terminal><parameter=command>ls</parameter><parameter=timeout_seconds>soon</parameter></function>", testSet(t))
	if len(calls) != 1 || !strings.Contains(calls[0].Error, "timeout_seconds") {
		t.Errorf("a non-integer integer parameter must be refused: %+v", calls)
	}
}

func TestParseJSONToolCall(t *testing.T) {
	text := `<tool_call>{"name": "terminal", "arguments": {"command": "go test ./..."}}</tool_call>
<tool_call>{"name": "finish", "arguments": {"summary": "done"}}</tool_call>`
	calls, rest := Parse(text, testSet(t))
	if len(calls) != 2 || calls[0].Error != "" || calls[1].Error != "" {
		t.Fatalf("%+v", calls)
	}
	if calls[0].Name != "terminal" || calls[1].Name != "finish" || calls[1].ID != "call_2" {
		t.Errorf("%+v", calls)
	}
	if rest != "" {
		t.Errorf("rest %q", rest)
	}
}

// Malformed and invalid calls come back with an Error and no arguments
// that could be half-executed.
func TestParseMalformed(t *testing.T) {
	cases := map[string]string{
		"unterminated tool_call":  `<tool_call>{"name": "terminal", "arguments": {"command": "rm -rf x"}}`,
		"unterminated function":   "<function=terminal><parameter=command>ls</parameter>",
		"unterminated parameter":  "<function=terminal><parameter=command>ls</function>",
		"bad json":                `<tool_call>{"name": "terminal", "arguments": {"command": }</tool_call>`,
		"unknown tool":            `<tool_call>{"name": "browser", "arguments": {}}</tool_call>`,
		"missing required":        `<tool_call>{"name": "file_editor", "arguments": {"command": "view"}}</tool_call>`,
		"bad enum":                `<tool_call>{"name": "file_editor", "arguments": {"command": "delete", "path": "a"}}</tool_call>`,
		"unknown property":        `<tool_call>{"name": "terminal", "arguments": {"command": "ls", "sudo": true}}</tool_call>`,
		"wrong type":              `<tool_call>{"name": "terminal", "arguments": {"command": ["ls"]}}</tool_call>`,
		"arguments not an object": `<tool_call>{"name": "terminal", "arguments": "ls"}</tool_call>`,
		"text inside function":    "<function=terminal>run ls<parameter=command>ls</parameter></function>",
		"duplicate parameter":     "<function=terminal><parameter=command>ls</parameter><parameter=command>rm</parameter></function>",
		"below minimum":           `<tool_call>{"name": "terminal", "arguments": {"command": "ls", "timeout_seconds": 0}}</tool_call>`,
	}
	for name, text := range cases {
		calls, _ := Parse(text, testSet(t))
		if len(calls) != 1 {
			t.Errorf("%s: %d calls", name, len(calls))
			continue
		}
		if calls[0].Error == "" {
			t.Errorf("%s: accepted %s", name, calls[0].Arguments)
		}
	}
}

func TestParsePlainText(t *testing.T) {
	calls, rest := Parse("All done, the tests pass.", testSet(t))
	if len(calls) != 0 || rest != "All done, the tests pass." {
		t.Errorf("%v %q", calls, rest)
	}
}

func TestNativeArguments(t *testing.T) {
	for in, want := range map[string]string{
		`"{\"command\":\"ls\"}"`: `{"command":"ls"}`,
		`{"command":"ls"}`:       `{"command":"ls"}`,
		`""`:                     `{}`,
	} {
		got, err := NativeArguments(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("NativeArguments(%s) = %s, %v", in, got, err)
		}
	}
	for _, bad := range []string{`"[1]"`, `"{bad"`, `3`} {
		if _, err := NativeArguments(json.RawMessage(bad)); err == nil {
			t.Errorf("NativeArguments(%s) accepted", bad)
		}
	}
}

func TestFallbackPromptNamesTools(t *testing.T) {
	p := FallbackPrompt([]Spec{{Name: "terminal", Description: "Run bash.", Parameters: json.RawMessage(`{"type": "object"}`)}})
	if !strings.Contains(p, "## terminal") || !strings.Contains(p, "<function=TOOL_NAME>") || !strings.Contains(p, `{"type":"object"}`) {
		t.Errorf("prompt:\n%s", p)
	}
}

func TestCompileSchemaRejects(t *testing.T) {
	for _, bad := range []string{`{"type":"strin"}`, `{"type":3}`, `{"properties":{"a":null}}`, `[`} {
		if _, err := CompileSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("CompileSchema(%s) accepted", bad)
		}
	}
}

// FuzzParseToolCalls: Parse never panics, and every call it returns is
// either an error or a well-formed call of a known tool whose arguments
// fit its schema — nothing in between that could run half-parsed.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{
		"<tool_call>\n<function=terminal>\n<parameter=command>\ngo test ./...\n</parameter>\n</function>\n</tool_call>",
		`<tool_call>{"name": "finish", "arguments": {"summary": "ok"}}</tool_call>`,
		"<function=file_editor><parameter=command>view</parameter><parameter=path>a.go</parameter><parameter=view_range>[1, 20]</parameter></function>",
		"<tool_call><function=terminal><parameter=command>ls",
		"text <function=",
		`<tool_call>{"name":"terminal","arguments":"{\"command\":\"ls\"}"}</tool_call>`,
	} {
		f.Add(s)
	}
	set := testSet(f)
	f.Fuzz(func(t *testing.T, text string) {
		calls, _ := Parse(text, set)
		for _, c := range calls {
			if c.Error != "" {
				continue
			}
			schema, ok := set[c.Name]
			if !ok {
				t.Fatalf("call of unknown tool %q without an error", c.Name)
			}
			if err := schema.Validate(c.Arguments); err != nil {
				t.Fatalf("call %s passed with invalid arguments %s: %v", c.Name, c.Arguments, err)
			}
		}
	})
}
