package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"
)

// TestClientSessionRecordsAndAnswers: a session keeps what a server sends
// (diagnostics per URI, progress, messages, other notifications), wakes
// its waits, accepts work-done progress itself and answers other requests
// through Answer, recording them first.
func TestClientSessionRecordsAndAnswers(t *testing.T) {
	cli, srv := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var watched []string
	s := NewClientSession(ctx, cli, SessionOptions{
		Answer: func(method string, _ json.RawMessage) (any, error) {
			if method == "window/showDocument" {
				return map[string]any{"success": true}, nil
			}
			return nil, Errorf(CodeMethodNotFound, "no %s", method)
		},
		Watch: func(method string, _ json.RawMessage) { watched = append(watched, method) },
	})
	defer s.Conn.Close()
	w := &wire{t: t, conn: srv, r: bufio.NewReader(srv)}

	const uri = "file:///r/a.go"
	w.send(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"t1","value":{"kind":"end","message":"done"}}}`)
	w.send(`{"jsonrpc":"2.0","method":"window/showMessage","params":{"type":3,"message":"hello"}}`)
	w.send(`{"jsonrpc":"2.0","method":"bcode/taskChanged","params":{"id":"x"}}`)
	w.send(`{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"` + uri + `","diagnostics":[{"range":{"start":{"line":1,"character":0},"end":{"line":1,"character":3}},"severity":2,"message":"m"}]}}`)
	got, err := s.AwaitDiagnostics(ctx, uri, "a warning", func(ds []Diagnostic) bool { return len(ds) == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Severity != SeverityWarning || s.Publishes(uri) != 1 {
		t.Errorf("diagnostics %+v, %d publishes", got, s.Publishes(uri))
	}
	if msg, err := s.AwaitProgressEnd(ctx, "t1"); err != nil || msg != "done" {
		t.Errorf("progress end %q, %v", msg, err)
	}
	if m := s.Messages(); len(m) != 1 || m[0] != "hello" {
		t.Errorf("messages %q", m)
	}
	if n := s.Notifications("bcode/taskChanged"); len(n) != 1 {
		t.Errorf("taskChanged notifications %v", n)
	}

	for _, req := range []struct{ id, method, want string }{
		{"1", "window/workDoneProgress/create", `null`},
		{"2", "window/showDocument", `{"success":true}`},
		{"3", "workspace/configuration", ``},
	} {
		w.send(`{"jsonrpc":"2.0","id":` + req.id + `,"method":"` + req.method + `","params":{}}`)
		m, err := w.recv()
		if err != nil {
			t.Fatal(err)
		}
		if req.want == "" {
			if m["error"] == nil {
				t.Errorf("%s: answered %s, want an error", req.method, m["result"])
			}
			continue
		}
		if string(m["result"]) != req.want {
			t.Errorf("%s: answered %s, want %s", req.method, m["result"], req.want)
		}
	}
	if r := s.Requests("window/showDocument"); len(r) != 1 {
		t.Errorf("showDocument requests %v", r)
	}
	if len(watched) != 4 {
		t.Errorf("Watch saw %v, want the four notifications", watched)
	}
}
