// Package openai is a client for OpenAI-compatible chat-completion servers,
// llama.cpp's llama-server first: chat completions with tools, streamed
// (server-sent events) or not, token usage and llama.cpp's timings, and
// llama-server's own endpoints (/props, /slots, /health, /tokenize).
// It speaks HTTP only; what may be sent is the gateway's business.
package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Message is one chat message in the OpenAI shape.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a native tool call. Arguments is the JSON text of the
// arguments object, as OpenAI sends it.
type ToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Type     string       `json:"type"` // "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction describes a function tool.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is a chat-completion request.
type Request struct {
	Model       string    `json:"model,omitempty"`
	Messages    []Message `json:"messages"`
	Tools       []Tool    `json:"tools,omitempty"`
	Stream      bool      `json:"stream,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	// StreamOptions asks for usage in the last streamed chunk.
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
}

// StreamOptions of a streamed request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Usage is the token count of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is a finished completion, streamed or not.
type Response struct {
	Model        string
	Message      Message
	FinishReason string
	Usage        Usage
	// Timings is llama.cpp's timings object (prompt_n, prompt_ms,
	// predicted_n, predicted_per_second...), kept verbatim; nil from
	// servers that send none.
	Timings json.RawMessage
}

// Client talks to one server.
type Client struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:8080 (a trailing
	// /v1 is accepted too).
	BaseURL string
	// APIKey, when set, is sent as a bearer token. It stays on the host.
	APIKey string
	HTTP   *http.Client
}

// New returns a client for baseURL.
func New(baseURL, apiKey string) *Client {
	return &Client{BaseURL: baseURL, APIKey: apiKey, HTTP: &http.Client{Timeout: 30 * time.Minute}}
}

func (c *Client) root() string {
	return strings.TrimSuffix(strings.TrimSuffix(c.BaseURL, "/"), "/v1")
}

// APIError is an error response from the server.
type APIError struct {
	Status  int
	Type    string
	Message string
	// NPromptTokens and NCtx are set by llama-server on
	// exceed_context_size_error.
	NPromptTokens int
	NCtx          int
}

func (e *APIError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("model server: HTTP %d %s: %s", e.Status, e.Type, e.Message)
	}
	return fmt.Sprintf("model server: HTTP %d: %s", e.Status, e.Message)
}

// ContextOverflowType is llama-server's error type for a prompt that does
// not fit the context window.
const ContextOverflowType = "exceed_context_size_error"

// IsContextOverflow reports whether err says the prompt did not fit.
func IsContextOverflow(err error) bool {
	var e *APIError
	if !errors.As(err, &e) {
		return false
	}
	if e.Type == ContextOverflowType || e.Type == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "exceeds the available context size") || strings.Contains(m, "maximum context length")
}

func (c *Client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.root()+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("model server %s: %w", c.root(), err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

func readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	e := &APIError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	if json.Unmarshal(b, &env) == nil && len(env.Error) > 0 {
		var obj struct {
			Type          string `json:"type"`
			Message       string `json:"message"`
			NPromptTokens int    `json:"n_prompt_tokens"`
			NCtx          int    `json:"n_ctx"`
		}
		if json.Unmarshal(env.Error, &obj) == nil {
			e.Type, e.Message, e.NPromptTokens, e.NCtx = obj.Type, obj.Message, obj.NPromptTokens, obj.NCtx
		} else {
			var s string
			if json.Unmarshal(env.Error, &s) == nil {
				e.Message = s
			}
		}
	}
	if len(e.Message) > 2000 {
		e.Message = e.Message[:2000] + "…"
	}
	return e
}

type completion struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      Message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Timings json.RawMessage `json:"timings"`
}

// Chat sends req and returns the model's reply. When req.Stream is set the
// reply is read as server-sent events and onDelta (may be nil) receives the
// content as it arrives; tool-call fragments are put together by index.
func (c *Client) Chat(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	if req.Stream && req.StreamOptions == nil {
		req.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	resp, err := c.do(ctx, http.MethodPost, "/v1/chat/completions", req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if req.Stream {
		return readStream(resp.Body, onDelta)
	}
	var cr completion
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&cr); err != nil {
		return nil, fmt.Errorf("model server: bad completion: %w", err)
	}
	if len(cr.Choices) == 0 {
		return nil, errors.New("model server: completion without choices")
	}
	out := &Response{Model: cr.Model, Message: cr.Choices[0].Message, FinishReason: cr.Choices[0].FinishReason, Timings: cr.Timings}
	if cr.Usage != nil {
		out.Usage = *cr.Usage
	}
	return out, nil
}

type chunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Timings json.RawMessage `json:"timings"`
	Error   json.RawMessage `json:"error"`
}

func readStream(body io.Reader, onDelta func(string)) (*Response, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	out := &Response{Message: Message{Role: "assistant"}}
	var content strings.Builder
	var calls []ToolCall
	done := false
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments, event names, blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, fmt.Errorf("model server: bad stream chunk: %w", err)
		}
		if len(ch.Error) > 0 {
			var e struct {
				Code    int    `json:"code"`
				Type    string `json:"type"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(ch.Error, &e)
			return nil, &APIError{Status: e.Code, Type: e.Type, Message: e.Message}
		}
		if ch.Model != "" {
			out.Model = ch.Model
		}
		if ch.Usage != nil {
			out.Usage = *ch.Usage
		}
		if len(ch.Timings) > 0 && string(ch.Timings) != "null" {
			out.Timings = ch.Timings
		}
		for _, choice := range ch.Choices {
			if choice.Delta.Content != "" {
				content.WriteString(choice.Delta.Content)
				if onDelta != nil {
					onDelta(choice.Delta.Content)
				}
			}
			for _, tc := range choice.Delta.ToolCalls {
				if tc.Index < 0 || tc.Index > 256 {
					return nil, fmt.Errorf("model server: tool call index %d out of range", tc.Index)
				}
				for len(calls) <= tc.Index {
					calls = append(calls, ToolCall{Type: "function"})
				}
				c := &calls[tc.Index]
				if tc.ID != "" {
					c.ID = tc.ID
				}
				c.Function.Name += tc.Function.Name
				c.Function.Arguments += tc.Function.Arguments
			}
			if choice.FinishReason != nil {
				out.FinishReason = *choice.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("model server: reading stream: %w", err)
	}
	if !done && out.FinishReason == "" {
		return nil, errors.New("model server: the stream ended before the reply was complete")
	}
	out.Message.Content = content.String()
	out.Message.ToolCalls = calls
	return out, nil
}

// Props is what llama-server's /props says about the loaded model.
type Props struct {
	// NCtx is the context window per slot.
	NCtx int
	// SupportsTools: the chat template renders tools (llama-server runs with
	// --jinja and the template knows tool calls).
	SupportsTools bool
	ModelPath     string
	BuildInfo     string
}

// Props reads /props. A server that is not llama-server (no /props) gives
// an *APIError with status 404.
func (c *Client) Props(ctx context.Context) (*Props, error) {
	resp, err := c.do(ctx, http.MethodGet, "/props", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var p struct {
		DefaultGenerationSettings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx             int             `json:"n_ctx"`
		ChatTemplateCaps map[string]bool `json:"chat_template_caps"`
		ModelPath        string          `json:"model_path"`
		BuildInfo        string          `json:"build_info"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&p); err != nil {
		return nil, fmt.Errorf("model server: bad /props: %w", err)
	}
	out := &Props{NCtx: p.DefaultGenerationSettings.NCtx, ModelPath: p.ModelPath, BuildInfo: p.BuildInfo}
	if out.NCtx == 0 {
		out.NCtx = p.NCtx
	}
	out.SupportsTools = p.ChatTemplateCaps["supports_tools"] || p.ChatTemplateCaps["supports_tool_calls"]
	return out, nil
}

// SlotsNCtx reads n_ctx from /slots (the first slot's), for servers whose
// /props does not carry it.
func (c *Client) SlotsNCtx(ctx context.Context) (int, error) {
	resp, err := c.do(ctx, http.MethodGet, "/slots", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var slots []struct {
		NCtx int `json:"n_ctx"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&slots); err != nil {
		return 0, fmt.Errorf("model server: bad /slots: %w", err)
	}
	if len(slots) == 0 {
		return 0, errors.New("model server: /slots lists no slot")
	}
	return slots[0].NCtx, nil
}

// Health reports nil when /health says the model is loaded.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Tokenize counts the tokens of text with the server's tokenizer.
func (c *Client) Tokenize(ctx context.Context, text string) (int, error) {
	resp, err := c.do(ctx, http.MethodPost, "/tokenize", map[string]any{"content": text})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var t struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&t); err != nil {
		return 0, fmt.Errorf("model server: bad /tokenize: %w", err)
	}
	return len(t.Tokens), nil
}

// Models lists the served model ids (/v1/models).
func (c *Client) Models(ctx context.Context) ([]string, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("model server: bad /v1/models: %w", err)
	}
	var ids []string
	for _, d := range m.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}
