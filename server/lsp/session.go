package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// Progress is one $/progress report a client received.
type Progress struct {
	Token string
	ProgressValue
}

// Message is one notification or request a client received from the
// server, as it came.
type Message struct {
	Method string
	Params json.RawMessage
}

// SessionOptions say how a ClientSession answers and watches the server.
type SessionOptions struct {
	// Answer answers the server's requests other than
	// window/workDoneProgress/create, which the session accepts itself.
	// Nil answers every one with CodeMethodNotFound. It runs on the
	// connection's read loop, after the request is recorded.
	Answer func(method string, params json.RawMessage) (any, error)
	// Watch sees every notification once it is recorded, on the read loop,
	// in the order the server sent them (`bcode ci` prints progress as it
	// comes). It must not wait on the session.
	Watch func(method string, params json.RawMessage)
}

// ClientSession is the client side of one conversation with bcode-ls:
// the connection and everything the server sent on it (diagnostics per
// document, progress, messages, its requests), with waits on them. The fake
// editor holds one over an in-process pipe; `bcode ci` and the benchmarks
// hold one through Child, over a bcode-ls child process's stdio.
type ClientSession struct {
	// Conn sends the client's requests and notifications.
	Conn *ClientConn

	opts SessionOptions

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every message from the server
	diags    map[string][]Diagnostic
	pubs     map[string]int // publishDiagnostics received per URI
	progress []Progress
	messages []string  // window/showMessage texts
	notes    []Message // every other notification but window/logMessage
	requests []Message
}

// NewClientSession starts a session over rwc (Content-Length framing).
func NewClientSession(ctx context.Context, rwc io.ReadWriteCloser, opts SessionOptions) *ClientSession {
	s := &ClientSession{opts: opts, changed: make(chan struct{}), diags: map[string][]Diagnostic{}, pubs: map[string]int{}}
	s.Conn = NewClientConn(ctx, rwc, sessionHandler{s})
	return s
}

// Initialize sends initialize with params, then initialized, and returns
// the server's result.
func (s *ClientSession) Initialize(ctx context.Context, params any) (json.RawMessage, error) {
	var res json.RawMessage
	if err := s.Conn.Call(ctx, "initialize", params, &res); err != nil {
		return nil, err
	}
	return res, s.Conn.Notify(ctx, "initialized", map[string]any{})
}

// ToolInitialize is the initialize params of a client that is a tool, not
// an editor (`bcode ci`, the benchmarks): root, the tool's name, and
// work-done progress as its only capability.
func ToolInitialize(root, clientName string) map[string]any {
	return map[string]any{
		"processId":  os.Getpid(),
		"rootUri":    FileURI(root),
		"clientInfo": map[string]any{"name": clientName},
		"capabilities": map[string]any{
			"window": map[string]any{"workDoneProgress": true},
		},
	}
}

// Shutdown asks the server to shut down, then to exit. Errors are dropped:
// a server that is gone has stopped.
func (s *ClientSession) Shutdown(ctx context.Context) {
	_ = s.Conn.Call(ctx, "shutdown", nil, nil)
	_ = s.Conn.Notify(ctx, "exit", nil)
}

// Await waits until cond holds, or ctx ends. cond runs under the session's
// lock once at once and again after every message from the server, so it
// reads the session through the ...Locked methods only.
func (s *ClientSession) Await(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// Diagnostics are the diagnostics last published for uri.
func (s *ClientSession) Diagnostics(uri string) []Diagnostic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.diags[uri]
}

// Publishes counts the publishDiagnostics received for uri.
func (s *ClientSession) Publishes(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pubs[uri]
}

// AwaitDiagnostics waits until the diagnostics of uri satisfy cond, and
// returns them.
func (s *ClientSession) AwaitDiagnostics(ctx context.Context, uri, what string, cond func([]Diagnostic) bool) ([]Diagnostic, error) {
	var got []Diagnostic
	err := s.Await(ctx, what, func() bool {
		got = s.diags[uri]
		return cond(got)
	})
	return got, err
}

// ProgressReports returns every $/progress received so far.
func (s *ClientSession) ProgressReports() []Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Progress(nil), s.progress...)
}

// ProgressReportsLocked is ProgressReports inside an Await condition.
func (s *ClientSession) ProgressReportsLocked() []Progress { return s.progress }

// AwaitProgressEnd waits for the end report of token and returns its message.
func (s *ClientSession) AwaitProgressEnd(ctx context.Context, token string) (string, error) {
	var msg string
	err := s.Await(ctx, "the end of progress "+token, func() bool {
		for _, p := range s.progress {
			if p.Token == token && p.Kind == "end" {
				msg = p.Message
				return true
			}
		}
		return false
	})
	return msg, err
}

// Messages lists the window/showMessage texts received.
func (s *ClientSession) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.messages...)
}

// MessagesLocked is Messages inside an Await condition.
func (s *ClientSession) MessagesLocked() []string { return s.messages }

// Notifications returns the notifications received with method, other
// than publishDiagnostics, $/progress, window/showMessage and
// window/logMessage, which the session keeps in their own terms.
func (s *ClientSession) Notifications(method string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.NotificationsLocked(method)
}

// NotificationsLocked is Notifications inside an Await condition.
func (s *ClientSession) NotificationsLocked(method string) []Message {
	return withMethod(s.notes, method)
}

// Requests returns the server's requests received with method.
func (s *ClientSession) Requests(method string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.RequestsLocked(method)
}

// RequestsLocked is Requests inside an Await condition.
func (s *ClientSession) RequestsLocked(method string) []Message {
	return withMethod(s.requests, method)
}

func withMethod(ms []Message, method string) []Message {
	var out []Message
	for _, m := range ms {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// record keeps one notification, under the lock, and wakes the waits.
func (s *ClientSession) record(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.signalLocked()
	switch method {
	case "textDocument/publishDiagnostics":
		var p struct {
			URI         string       `json:"uri"`
			Diagnostics []Diagnostic `json:"diagnostics"`
		}
		if json.Unmarshal(params, &p) == nil {
			s.diags[p.URI] = p.Diagnostics
			s.pubs[p.URI]++
		}
	case "$/progress":
		var p struct {
			Token json.RawMessage `json:"token"`
			Value ProgressValue   `json:"value"`
		}
		if json.Unmarshal(params, &p) == nil {
			var tok string
			if json.Unmarshal(p.Token, &tok) != nil {
				tok = string(p.Token)
			}
			s.progress = append(s.progress, Progress{Token: tok, ProgressValue: p.Value})
		}
	case "window/showMessage":
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil {
			s.messages = append(s.messages, p.Message)
		}
	case "window/logMessage":
	default:
		s.notes = append(s.notes, Message{Method: method, Params: params})
	}
}

func (s *ClientSession) recordRequest(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Message{Method: method, Params: params})
	s.signalLocked()
}

func (s *ClientSession) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// sessionHandler is the session as the connection's ClientHandler; the
// methods stay off ClientSession's own API.
type sessionHandler struct{ s *ClientSession }

func (h sessionHandler) Notification(method string, params json.RawMessage) {
	h.s.record(method, params)
	if h.s.opts.Watch != nil {
		h.s.opts.Watch(method, params)
	}
}

func (h sessionHandler) Request(method string, params json.RawMessage) (any, error) {
	h.s.recordRequest(method, params)
	switch {
	case method == "window/workDoneProgress/create":
		return nil, nil
	case h.s.opts.Answer != nil:
		return h.s.opts.Answer(method, params)
	}
	return nil, Errorf(CodeMethodNotFound, "the client does not handle %s", method)
}
