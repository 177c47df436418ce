package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/openai"
)

var terminalTool = openai.Tool{Type: "function", Function: openai.ToolFunction{Name: "terminal",
	Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}

func TestChatStreamedAndNot(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := modeltest.New(modeltest.Options{Tools: true},
			modeltest.Step{Content: "Running the tests now.", ToolCalls: []modeltest.Call{
				{Name: "terminal", Arguments: `{"command":"go test ./..."}`},
				{Name: "terminal", Arguments: `{"command":"git status"}`},
			}})
		c := openai.New(srv.URL, "")
		var deltas []string
		resp, err := c.Chat(context.Background(), openai.Request{
			Messages: []openai.Message{{Role: "user", Content: "fix the bug"}},
			Tools:    []openai.Tool{terminalTool}, Stream: stream,
		}, func(d string) { deltas = append(deltas, d) })
		srv.Close()
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if resp.Message.Content != "Running the tests now." {
			t.Errorf("stream=%v: content %q", stream, resp.Message.Content)
		}
		if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Function.Arguments != `{"command":"git status"}` ||
			resp.Message.ToolCalls[0].Function.Name != "terminal" || resp.Message.ToolCalls[0].ID == "" {
			t.Errorf("stream=%v: tool calls %+v", stream, resp.Message.ToolCalls)
		}
		if resp.FinishReason != "tool_calls" || resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 {
			t.Errorf("stream=%v: finish %q usage %+v", stream, resp.FinishReason, resp.Usage)
		}
		var timings struct {
			PredictedN int `json:"predicted_n"`
		}
		if err := json.Unmarshal(resp.Timings, &timings); err != nil || timings.PredictedN != resp.Usage.CompletionTokens {
			t.Errorf("stream=%v: timings %s", stream, resp.Timings)
		}
		if stream && (len(deltas) < 2 || strings.Join(deltas, "") != resp.Message.Content) {
			t.Errorf("deltas %q", deltas)
		}
		if got := srv.Requests(); len(got) != 1 || got[0].Stream != stream || !strings.Contains(string(got[0].Body), `"include_usage":true`) == stream {
			t.Errorf("stream=%v: requests %+v", stream, got)
		}
	}
}

func TestChatContextOverflow(t *testing.T) {
	srv := modeltest.New(modeltest.Options{Tools: true, NCtx: 16384})
	defer srv.Close()
	_, err := openai.New(srv.URL, "").Chat(context.Background(), openai.Request{
		Messages: []openai.Message{{Role: "user", Content: strings.Repeat("word ", 20000)}},
	}, nil)
	if !openai.IsContextOverflow(err) {
		t.Fatalf("got %v, want a context overflow", err)
	}
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.NCtx != 16384 || apiErr.NPromptTokens <= 16384 || apiErr.Status != 400 {
		t.Errorf("error details %+v", apiErr)
	}
}

func TestPropsSlotsTokenizeModels(t *testing.T) {
	srv := modeltest.New(modeltest.Options{Tools: false, NCtx: 8192, NoPropsNCtx: true, Model: "qwen"})
	defer srv.Close()
	c := openai.New(srv.URL+"/v1", "")
	ctx := context.Background()
	p, err := c.Props(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.SupportsTools || p.NCtx != 0 || !strings.HasSuffix(p.ModelPath, "qwen.gguf") {
		t.Errorf("props %+v", p)
	}
	n, err := c.SlotsNCtx(ctx)
	if err != nil || n != 8192 {
		t.Errorf("slots n_ctx %d %v", n, err)
	}
	if err := c.Health(ctx); err != nil {
		t.Error(err)
	}
	if k, err := c.Tokenize(ctx, "abcdefgh"); err != nil || k != 2 {
		t.Errorf("tokenize %d %v", k, err)
	}
	if ids, err := c.Models(ctx); err != nil || len(ids) != 1 || ids[0] != "qwen" {
		t.Errorf("models %v %v", ids, err)
	}
	// A template without tool support refuses tools, as llama-server does.
	_, err = c.Chat(ctx, openai.Request{Messages: []openai.Message{{Role: "user", Content: "x"}}, Tools: []openai.Tool{terminalTool}}, nil)
	if err == nil || !strings.Contains(err.Error(), "--jinja") {
		t.Errorf("tools to a tool-less template: %v", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	srv := modeltest.New(modeltest.Options{})
	url := srv.URL
	srv.Close()
	err := openai.New(url, "").Health(context.Background())
	if err == nil || !strings.Contains(err.Error(), url) {
		t.Errorf("got %v", err)
	}
}
