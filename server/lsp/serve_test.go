package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nopHandler answers every request with nothing; the framing tests only
// need a server that stays up.
type nopHandler struct{}

func (nopHandler) Initialize(context.Context, *InitializeParams) (*InitializeResult, error) {
	return &InitializeResult{}, nil
}
func (nopHandler) Initialized(context.Context)                               {}
func (nopHandler) Shutdown(context.Context) error                            { return nil }
func (h nopHandler) Exit(context.Context)                                    {}
func (nopHandler) DidOpen(context.Context, TextDocumentItem)                 {}
func (nopHandler) DidChange(context.Context, string, int32, []ContentChange) {}
func (nopHandler) DidSave(context.Context, string)                           {}
func (nopHandler) DidClose(context.Context, string)                          {}
func (nopHandler) DidChangeWatchedFiles(context.Context, []string)           {}
func (nopHandler) DidChangeConfiguration(context.Context, json.RawMessage)   {}
func (nopHandler) CodeAction(context.Context, *CodeActionParams) ([]CodeAction, error) {
	return nil, nil
}
func (nopHandler) ExecuteCommand(context.Context, string, []json.RawMessage) (any, error) {
	return nil, nil
}
func (nopHandler) TextDocumentContent(context.Context, string) (string, error) { return "", nil }
func (nopHandler) WorkDoneProgressCancel(context.Context, ProgressToken)       {}
func (nopHandler) Custom(_ context.Context, method string, _ json.RawMessage) (any, error) {
	return map[string]string{"method": method}, nil
}

// wire is the client end of a Serve connection at the byte level.
type wire struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	done chan error
}

func serveWire(t *testing.T) *wire {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), a, func(Client) Handler { return nopHandler{} }, nil)
	}()
	t.Cleanup(func() { b.Close() })
	return &wire{t: t, conn: b, r: bufio.NewReader(b), done: done}
}

func (w *wire) send(body string) {
	w.t.Helper()
	w.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(w.conn, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		w.t.Errorf("writing %s: %v", body, err)
	}
}

// recv reads one framed message.
func (w *wire) recv() (map[string]json.RawMessage, error) {
	w.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n := -1
	for {
		line, err := w.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(w.r, body); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(body, &m)
}

// TestServeSurvivesMalformedMessages sends each kind of malformed message a
// broken or hostile client has sent, then a good request: the server must
// answer it, so a running evidence run is never lost to a bad frame.
func TestServeSurvivesMalformedMessages(t *testing.T) {
	bad := []struct {
		name, body string
		replyID    string // the id of the error reply ("" for none: a notification)
	}{
		{"cancel with an object id", `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{"x":1}}}`, ""},
		{"cancel with no params", `{"jsonrpc":"2.0","method":"$/cancelRequest"}`, ""},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"bcode/ping"}`, "null"},
		{"missing jsonrpc", `{"id":7,"method":"bcode/ping"}`, "7"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":8,"method":"bcode/ping"}`, "8"},
		{"numeric method", `{"jsonrpc":"2.0","id":9,"method":42}`, "9"},
		{"empty object", `{}`, ""},
		{"not json", `{"jsonrpc":`, "null"},
		{"array", `[]`, "null"},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"bcode/ping"}`, "null"},
		{"scalar params on a notification", `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":7}`, ""},
		{"method and result", `{"jsonrpc":"2.0","id":3,"method":"bcode/ping","result":1}`, "3"},
		{"null", `null`, "null"},
		{"bad didOpen params", `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":5}}`, ""},
	}
	for i, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			w := serveWire(t)
			id := 100 + i
			// net.Pipe is unbuffered: write while the test reads replies.
			go func() {
				w.send(tc.body)
				w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"bcode/ping"}`, id))
			}()
			var replies []string
			for {
				m, err := w.recv()
				if err != nil {
					select {
					case serr := <-w.done:
						t.Fatalf("the server ended after %s: %v (read: %v)", tc.body, serr, err)
					default:
					}
					t.Fatalf("no answer to a good request after %s: %v", tc.body, err)
				}
				if string(m["id"]) == strconv.Itoa(id) {
					if _, ok := m["result"]; !ok {
						t.Fatalf("good request after %s got %v", tc.body, m)
					}
					break
				}
				if _, ok := m["error"]; !ok {
					t.Fatalf("unexpected message after %s: %v", tc.body, m)
				}
				replies = append(replies, string(m["id"]))
			}
			want := []string(nil)
			if tc.replyID != "" {
				want = []string{tc.replyID}
			}
			if fmt.Sprint(replies) != fmt.Sprint(want) {
				t.Errorf("error replies to %s: ids %v, want %v", tc.body, replies, want)
			}
		})
	}
}

// TestExitWithoutShutdown: the spec has the server exit with code 1 when
// exit comes without shutdown, and 0 after it.
func TestExitWithoutShutdown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown bool
		want     error
	}{{"exit alone", false, ErrExitWithoutShutdown}, {"shutdown then exit", true, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			w := serveWire(t)
			go func() {
				if tc.shutdown {
					w.send(`{"jsonrpc":"2.0","id":1,"method":"shutdown"}`)
				}
				w.send(`{"jsonrpc":"2.0","method":"exit"}`)
			}()
			if tc.shutdown {
				if m, err := w.recv(); err != nil || string(m["id"]) != "1" {
					t.Fatalf("shutdown reply: %v %v", m, err)
				}
			}
			select {
			case err := <-w.done:
				if err != tc.want {
					t.Fatalf("Serve = %v, want %v", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after exit")
			}
		})
	}
}
