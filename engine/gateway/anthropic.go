package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/gateway/openai"
)

// AnthropicBackend is a frontier endpoint speaking Anthropic's Messages API.
// The key is read on the host and sent only in the request header.
type AnthropicBackend struct {
	BaseURL   string // e.g. https://api.anthropic.com
	APIKey    string
	ModelName string
	MaxTokens int
	HTTP      *http.Client
}

// Endpoint implements Backend.
func (b *AnthropicBackend) Endpoint() string { return b.BaseURL }

// Model implements Backend.
func (b *AnthropicBackend) Model() string { return b.ModelName }

func (b *AnthropicBackend) guarded() Backend {
	cp := *b
	cp.HTTP = guardClient(b.HTTP, 10*time.Minute)
	return &cp
}

type anthBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type anthMessage struct {
	Role    string      `json:"role"`
	Content []anthBlock `json:"content"`
}

// Complete implements Backend: system messages become the system field,
// tool calls tool_use blocks, tool results tool_result blocks in a user turn.
func (b *AnthropicBackend) Complete(ctx context.Context, msgs []openai.Message, tools []openai.Tool, onDelta func(string)) (*openai.Response, error) {
	system, out := anthropicMessages(msgs)
	maxTok := b.MaxTokens
	if maxTok <= 0 {
		maxTok = 8192
	}
	body, err := json.Marshal(map[string]any{"model": b.ModelName, "max_tokens": maxTok, "system": system, "messages": out, "tools": anthropicTools(tools)})
	if err != nil {
		return nil, err
	}
	raw, err := b.post(ctx, body)
	if err != nil {
		return nil, err
	}
	res, err := decodeAnthropic(raw)
	if err != nil {
		return nil, err
	}
	if onDelta != nil && res.Message.Content != "" {
		onDelta(res.Message.Content)
	}
	return res, nil
}

// anthropicMessages converts the conversation: the system messages joined
// into the system field, and the rest as turns, consecutive blocks of one
// role merged into one turn (the API wants the roles to alternate).
func anthropicMessages(msgs []openai.Message) (system string, out []anthMessage) {
	var systems []string
	add := func(role string, blk anthBlock) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blk)
			return
		}
		out = append(out, anthMessage{Role: role, Content: []anthBlock{blk}})
	}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			systems = append(systems, m.Content)
		case "assistant":
			if m.Content != "" {
				add("assistant", anthBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				in := json.RawMessage(tc.Function.Arguments)
				if !json.Valid(in) {
					in = json.RawMessage(`{}`)
				}
				add("assistant", anthBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: in})
			}
		case "tool":
			add("user", anthBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		default:
			add("user", anthBlock{Type: "text", Text: m.Content})
		}
	}
	return strings.Join(systems, "\n\n"), out
}

// anthTool is a tool as the Messages API declares it.
type anthTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// anthropicTools converts the tools' declarations (nil for none).
func anthropicTools(tools []openai.Tool) []anthTool {
	var ts []anthTool
	for _, t := range tools {
		ts = append(ts, anthTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters})
	}
	return ts
}

// post sends a Messages request and returns the body of a successful
// response; an unsuccessful one is an *openai.APIError.
func (b *AnthropicBackend) post(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(b.BaseURL, "/")+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", b.APIKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	hc := b.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("frontier endpoint %s: %w", b.BaseURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, anthropicError(resp.StatusCode, raw)
	}
	return raw, nil
}

// anthropicError is the error of an unsuccessful response; a prompt over
// the model's context gets llama-server's type for it
// (openai.ContextOverflowType), which the gateway recognises.
func anthropicError(status int, raw []byte) *openai.APIError {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	ae := &openai.APIError{Status: status, Type: e.Error.Type, Message: e.Error.Message}
	if strings.Contains(strings.ToLower(ae.Message), "prompt is too long") {
		ae.Type = openai.ContextOverflowType
	}
	return ae
}

// decodeAnthropic converts a successful response: text blocks joined into
// the message's content, tool_use blocks into tool calls.
func decodeAnthropic(raw []byte) (*openai.Response, error) {
	var r struct {
		Model      string      `json:"model"`
		Content    []anthBlock `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("frontier endpoint: bad response: %w", err)
	}
	if len(r.Content) == 0 && r.StopReason == "" {
		return nil, errors.New("frontier endpoint: empty response")
	}
	res := &openai.Response{Model: r.Model, FinishReason: r.StopReason, Message: openai.Message{Role: "assistant"},
		Usage: openai.Usage{PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens, TotalTokens: r.Usage.InputTokens + r.Usage.OutputTokens}}
	var text strings.Builder
	for _, blk := range r.Content {
		switch blk.Type {
		case "text":
			text.WriteString(blk.Text)
		case "tool_use":
			tc := openai.ToolCall{ID: blk.ID, Type: "function"}
			tc.Function.Name = blk.Name
			tc.Function.Arguments = string(blk.Input)
			res.Message.ToolCalls = append(res.Message.ToolCalls, tc)
		}
	}
	res.Message.Content = text.String()
	return res, nil
}
