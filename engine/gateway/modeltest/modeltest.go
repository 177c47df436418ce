// Package modeltest is a scripted model server for tests: an HTTP server
// that speaks llama-server's OpenAI-compatible API — /v1/chat/completions
// with tools, streamed and not, usage and llama.cpp's timings, /props with
// chat_template_caps, /slots, /health, /tokenize, /v1/models, and
// exceed_context_size_error — and answers each completion with the next
// step of a script. It records every request body as received, so a test
// can assert on exactly what left the host.
//
// It is the one sanctioned stand-in for a model: the gateway, the agent and
// the runner run for real against it.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Call is a tool call a step makes. Arguments is the JSON text of the
// arguments object (written as the model would, so it may be invalid on
// purpose).
type Call struct {
	Name      string
	Arguments string
}

// Step is one scripted completion.
type Step struct {
	// Content is the reply's text (for the XML fallback, the tool calls
	// written out as text).
	Content string
	// ToolCalls are native tool calls.
	ToolCalls []Call
	// FinishReason defaults to "tool_calls" with calls, else "stop".
	FinishReason string
	// PromptTokens and CompletionTokens override the counts the server
	// estimates (a quarter of the characters).
	PromptTokens, CompletionTokens int
	// Overflow answers with exceed_context_size_error whatever the prompt
	// size; the step is consumed.
	Overflow bool
}

// Options shape the server.
type Options struct {
	// NCtx is the context window reported by /props and /slots and
	// enforced on every completion (default 32768): a prompt whose
	// estimated size exceeds it gets exceed_context_size_error, and the
	// script does not advance.
	NCtx int
	// Tools: /props reports a chat template that supports tools (as with
	// --jinja). Without it, a request carrying tools is refused, as
	// llama-server does.
	Tools bool
	// Model is the id reported by /v1/models (default "scripted").
	Model string
	// NoPropsNCtx leaves n_ctx out of /props so clients must read /slots.
	NoPropsNCtx bool
	// Respond, when set, answers every completion instead of the script:
	// a policy over the conversation so far, for runs that are killed
	// and resumed at any point (a fixed script cannot know which replies
	// a killed run consumed).
	Respond func(msgs []Message) Step
}

// Message is one message of a completion request, as Respond sees it.
type Message struct {
	Role    string
	Content string
}

// Received is one request as the server got it.
type Received struct {
	Path string
	Body []byte
	// Header is the request's headers (to check no key was sent).
	Header http.Header
	// Stream is set when the request asked for server-sent events.
	Stream bool
}

// Server is a running scripted model server.
type Server struct {
	URL  string
	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	script   []Step
	next     int
	received []Received
	failures []string
}

// New starts a server that answers completions with script, in order.
func New(opts Options, script ...Step) *Server {
	if opts.NCtx == 0 {
		opts.NCtx = 32768
	}
	if opts.Model == "" {
		opts.Model = "scripted"
	}
	s := &Server{opts: opts, script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/props", s.props)
	mux.HandleFunc("/slots", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []map[string]any{{"id": 0, "n_ctx": s.opts.NCtx, "is_processing": false}})
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{{"id": s.opts.Model, "object": "model", "owned_by": "llamacpp", "meta": map[string]any{"n_ctx_train": s.opts.NCtx}}}})
	})
	mux.HandleFunc("/tokenize", s.tokenize)
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/chat/completions", s.chat)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the completion requests received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Remaining is the number of script steps not yet played.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// Failures lists requests the server could not answer from the script
// (exhausted script, tools sent to a template without tool support).
func (s *Server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	dgs := map[string]any{"params": map[string]any{"temperature": 0.8}}
	if !s.opts.NoPropsNCtx {
		dgs["n_ctx"] = s.opts.NCtx
	}
	writeJSON(w, 200, map[string]any{
		"default_generation_settings": dgs,
		"total_slots":                 1,
		"model_path":                  "/models/" + s.opts.Model + ".gguf",
		"chat_template":               "{# scripted #}",
		"chat_template_caps": map[string]bool{
			"supports_tools":       s.opts.Tools,
			"supports_tool_calls":  s.opts.Tools,
			"supports_system_role": true,
		},
		"build_info": "modeltest",
	})
}

// EstimateTokens is the server's token count: a quarter of the bytes,
// rounded up (what /tokenize returns and what the context check uses).
func EstimateTokens(text string) int { return (len(text) + 3) / 4 }

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content string `json:"content"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, 400, "invalid_request_error", "bad /tokenize body: "+err.Error(), nil)
		return
	}
	toks := make([]int, EstimateTokens(req.Content))
	for i := range toks {
		toks[i] = 1000 + i
	}
	writeJSON(w, 200, map[string]any{"tokens": toks})
}

type chatRequest struct {
	Messages []struct {
		Role      string          `json:"role"`
		Content   string          `json:"content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	} `json:"messages"`
	Tools  []json.RawMessage `json:"tools"`
	Stream bool              `json:"stream"`
}

func (s *Server) fail(w http.ResponseWriter, msg string) {
	s.mu.Lock()
	s.failures = append(s.failures, msg)
	s.mu.Unlock()
	writeError(w, 500, "server_error", msg, nil)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := readAll(r)
	if err != nil {
		writeError(w, 400, "invalid_request_error", err.Error(), nil)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, 400, "invalid_request_error", "bad request body: "+err.Error(), nil)
		return
	}
	s.mu.Lock()
	s.received = append(s.received, Received{Path: r.URL.Path, Body: body, Header: r.Header.Clone(), Stream: req.Stream})
	s.mu.Unlock()
	if len(req.Tools) > 0 && !s.opts.Tools {
		s.fail(w, "tools sent, but the chat template does not support tools (start llama-server with --jinja)")
		return
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += EstimateTokens(m.Content) + EstimateTokens(string(m.ToolCalls)) + 4
	}
	for _, t := range req.Tools {
		prompt += EstimateTokens(string(t))
	}
	if prompt > s.opts.NCtx {
		writeOverflow(w, prompt, s.opts.NCtx)
		return
	}
	// seq numbers this reply's ids; it is read under the lock, as
	// requests of several runners arrive at once.
	var st Step
	var seq int
	if s.opts.Respond != nil {
		msgs := make([]Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = Message{Role: m.Role, Content: m.Content}
		}
		st = s.opts.Respond(msgs)
		s.mu.Lock()
		s.next++
		seq = s.next
		s.mu.Unlock()
	} else {
		s.mu.Lock()
		if s.next >= len(s.script) {
			s.mu.Unlock()
			s.fail(w, fmt.Sprintf("script exhausted after %d steps", len(s.script)))
			return
		}
		st = s.script[s.next]
		s.next++
		seq = s.next
		s.mu.Unlock()
	}
	if st.Overflow {
		writeOverflow(w, s.opts.NCtx+1, s.opts.NCtx)
		return
	}
	if st.PromptTokens > 0 {
		prompt = st.PromptTokens
	}
	completion := st.CompletionTokens
	if completion == 0 {
		completion = EstimateTokens(st.Content) + 1
		for _, c := range st.ToolCalls {
			completion += EstimateTokens(c.Name + c.Arguments)
		}
	}
	finish := st.FinishReason
	if finish == "" {
		finish = "stop"
		if len(st.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	timings := map[string]any{
		"cache_n": 0, "prompt_n": prompt, "prompt_ms": float64(prompt) * 0.5, "prompt_per_token_ms": 0.5, "prompt_per_second": 2000.0,
		"predicted_n": completion, "predicted_ms": float64(completion) * 20, "predicted_per_token_ms": 20.0, "predicted_per_second": 50.0,
	}
	if req.Stream {
		s.stream(w, seq, st, finish, usage, timings)
		return
	}
	msg := map[string]any{"role": "assistant", "content": st.Content}
	if len(st.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range st.ToolCalls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", seq, i), "type": "function",
				"function": map[string]string{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, 200, map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", seq), "object": "chat.completion", "model": s.opts.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage, "timings": timings,
	})
}

// stream writes the reply as llama-server does: a role chunk, content in
// pieces, tool calls in fragments (name first, arguments split), the finish
// chunk, a usage chunk with timings, then [DONE].
func (s *Server) stream(w http.ResponseWriter, seq int, st Step, finish string, usage map[string]int, timings map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	choice := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"object": "chat.completion.chunk", "model": s.opts.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(choice(map[string]any{"role": "assistant", "content": nil}, nil))
	for _, piece := range split(st.Content, 3) {
		send(choice(map[string]any{"content": piece}, nil))
	}
	for i, c := range st.ToolCalls {
		send(choice(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": fmt.Sprintf("call_%d_%d", seq, i), "type": "function",
			"function": map[string]string{"name": c.Name, "arguments": ""}}}}, nil))
		for _, piece := range split(c.Arguments, 2) {
			send(choice(map[string]any{"tool_calls": []map[string]any{{"index": i, "function": map[string]string{"arguments": piece}}}}, nil))
		}
	}
	send(choice(map[string]any{}, finish))
	send(map[string]any{"object": "chat.completion.chunk", "model": s.opts.Model, "choices": []any{}, "usage": usage, "timings": timings})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		k := min(size, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func writeOverflow(w http.ResponseWriter, prompt, nctx int) {
	writeError(w, 400, "exceed_context_size_error",
		fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", prompt, nctx),
		map[string]any{"n_prompt_tokens": prompt, "n_ctx": nctx})
}

func writeError(w http.ResponseWriter, status int, typ, msg string, extra map[string]any) {
	e := map[string]any{"code": status, "message": msg, "type": typ}
	for k, v := range extra {
		e[k] = v
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func readAll(r *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r.Body, 64<<20))
}
