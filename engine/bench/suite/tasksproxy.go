package suite

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// ToolCall is one tool call as the model returned it.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ModelTurn is one completion as the model returned it: its text and its
// tool calls, before the gateway parsed, checked or redacted anything.
type ModelTurn struct {
	Content string     `json:"content,omitempty"`
	Calls   []ToolCall `json:"calls,omitempty"`
}

// recorder is a reverse proxy between the gateway and the model
// endpoint that keeps every completion the model returned. The base's
// configuration names it as the model, so whatever the model is (the
// scripted server, llama-server, any OpenAI-compatible endpoint) the
// grading reads the agent's calls as they came, not the agent's account.
type recorder struct {
	URL string
	srv *http.Server

	mu      sync.Mutex
	settled sync.Cond // signalled when pending falls
	pending int       // completions passed to the client, not yet recorded
	turns   []ModelTurn
	bad     []string // completions that could not be read
}

// newRecorder starts a recorder in front of upstream.
func newRecorder(upstream string) (*recorder, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("model endpoint %q: not an http(s) URL", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the recording proxy: %w", err)
	}
	rec := &recorder{URL: "http://" + ln.Addr().String()}
	rec.settled.L = &rec.mu
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// Plain bodies, so that what is recorded is what was read.
			r.Out.Header.Del("Accept-Encoding")
		},
		ModifyResponse: func(resp *http.Response) error {
			if strings.HasSuffix(resp.Request.URL.Path, "/chat/completions") && resp.StatusCode == http.StatusOK {
				rec.mu.Lock()
				rec.pending++
				rec.mu.Unlock()
				resp.Body = &teeBody{ReadCloser: resp.Body, done: rec.add}
			}
			return nil
		},
		FlushInterval: -1,
	}
	rec.srv = &http.Server{Handler: proxy}
	go rec.srv.Serve(ln)
	return rec, nil
}

// Close stops the proxy.
func (r *recorder) Close() error { return r.srv.Close() }

// Turns are the completions recorded so far, and the reasons of those
// that could not be read. It waits for every completion that has begun
// to reach the client: the proxy records one when it closes the model's
// body, which is after the client may have read the last byte (CI: a
// completion read whole and not yet recorded). The wait ends when the
// proxy does, as the client's disconnect cancels the model's request.
func (r *recorder) Turns() ([]ModelTurn, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.pending > 0 {
		r.settled.Wait()
	}
	return append([]ModelTurn(nil), r.turns...), append([]string(nil), r.bad...)
}

func (r *recorder) add(body []byte) {
	turn, err := parseCompletion(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	r.settled.Broadcast()
	if err != nil {
		r.bad = append(r.bad, err.Error())
		return
	}
	r.turns = append(r.turns, turn)
}

// teeBody keeps what the gateway reads and hands it over once closed.
type teeBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	once sync.Once
	done func([]byte)
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.buf.Write(p[:n])
	return n, err
}

func (t *teeBody) Close() error {
	t.once.Do(func() { t.done(t.buf.Bytes()) })
	return t.ReadCloser.Close()
}

// completion is the part of a chat completion (or of one streamed chunk)
// the grading reads.
type completion struct {
	Choices []struct {
		Message, Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int `json:"index"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
	} `json:"choices"`
}

// parseCompletion reads a chat completion, whole or streamed as
// server-sent events whose tool-call fragments join by index.
func parseCompletion(body []byte) (ModelTurn, error) {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("data:")) {
		var c completion
		if err := json.Unmarshal(trimmed, &c); err != nil {
			return ModelTurn{}, fmt.Errorf("a completion that is not JSON: %v", err)
		}
		var t ModelTurn
		for _, ch := range c.Choices {
			t.Content += ch.Message.Content
			for _, tc := range ch.Message.ToolCalls {
				t.Calls = append(t.Calls, ToolCall{tc.Function.Name, tc.Function.Arguments})
			}
		}
		return t, nil
	}
	return parseStream(trimmed)
}

func parseStream(body []byte) (ModelTurn, error) {
	var t ModelTurn
	calls := map[int]*ToolCall{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		data = strings.TrimSpace(data)
		if !ok || data == "" || data == "[DONE]" {
			continue
		}
		var c completion
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return ModelTurn{}, fmt.Errorf("a streamed chunk that is not JSON: %v", err)
		}
		for _, ch := range c.Choices {
			t.Content += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				if calls[tc.Index] == nil {
					calls[tc.Index] = &ToolCall{}
				}
				calls[tc.Index].Name += tc.Function.Name
				calls[tc.Index].Arguments += tc.Function.Arguments
			}
		}
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		t.Calls = append(t.Calls, *calls[i])
	}
	return t, sc.Err()
}
