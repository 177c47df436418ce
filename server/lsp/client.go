package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// ClientHandler receives what a server sends to a client. Both methods run
// on the connection's read loop, in order, so a test sees notifications in
// the order the server sent them; they must not call back into the
// connection and wait.
type ClientHandler interface {
	// Notification receives publishDiagnostics, $/progress, bcode/taskChanged
	// and every other notification.
	Notification(method string, params json.RawMessage)
	// Request answers a server-to-client request (window/showDocument,
	// window/workDoneProgress/create, ...).
	Request(method string, params json.RawMessage) (any, error)
}

// ClientConn is the client end of an LSP connection. Everything it sends
// and receives is encoded with encoding/json, independently of the protocol
// library the server decodes with.
type ClientConn struct {
	conn jsonrpc2.Conn
}

// NewClientConn starts a client connection over rwc (Content-Length
// framing); h receives what the server sends.
func NewClientConn(ctx context.Context, rwc io.ReadWriteCloser, h ClientHandler) *ClientConn {
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(rwc), jsonrpc2.WithCodec(codec{}))
	conn.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		method := strings.Clone(req.Method())
		params := json.RawMessage(append([]byte(nil), req.Params()...))
		if !req.IsCall() {
			h.Notification(method, params)
			return nil, nil
		}
		res, err := h.Request(method, params)
		if err != nil {
			return nil, wireError(ctx, err)
		}
		return encodeJSON(res)
	})
	return &ClientConn{conn: conn}
}

// Call sends a request and decodes its result into result (which may be
// nil). An error response comes back as *Error.
func (c *ClientConn) Call(ctx context.Context, method string, params, result any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding %s params: %w", method, err)
	}
	var raw jsonrpc2.RawMessage
	// protocol.Call sends $/cancelRequest when ctx ends first, so the
	// server stops working on an abandoned request.
	if err := protocol.Call(ctx, c.conn, method, jsonrpc2.RawMessage(b), &raw); err != nil {
		var je *jsonrpc2.Error
		if errors.As(err, &je) {
			return &Error{Code: int(je.Code), Message: je.Message, Data: json.RawMessage(je.Data)}
		}
		return err
	}
	if result == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("decoding the %s result %s: %w", method, truncate(raw), err)
	}
	return nil
}

// Notify sends a notification.
func (c *ClientConn) Notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding %s params: %w", method, err)
	}
	return c.conn.Notify(ctx, method, jsonrpc2.RawMessage(b))
}

// Close ends the connection.
func (c *ClientConn) Close() error { return c.conn.Close() }

// Done is closed when the connection has ended.
func (c *ClientConn) Done() <-chan struct{} { return c.conn.Done() }

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
