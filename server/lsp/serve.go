package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// Handler is what a language server implements. Methods for notifications
// return nothing: a notification has no reply, and (with jsonrpc2 v1.0.1) an
// error from one would tear the connection down.
//
// DidOpen, DidChange, DidSave, DidClose and DidChangeWatchedFiles are called
// one at a time, in the order the client sent them, on the connection's read
// loop: they must be quick (record the change, schedule work) and must never
// wait for the client. Every other method runs concurrently with later
// messages, so a slow request never blocks the connection.
type Handler interface {
	Initialize(ctx context.Context, p *InitializeParams) (*InitializeResult, error)
	Initialized(ctx context.Context)
	Shutdown(ctx context.Context) error
	// Exit is called before the connection closes.
	Exit(ctx context.Context)

	DidOpen(ctx context.Context, doc TextDocumentItem)
	DidChange(ctx context.Context, uri string, version int32, changes []ContentChange)
	DidSave(ctx context.Context, uri string)
	DidClose(ctx context.Context, uri string)
	DidChangeWatchedFiles(ctx context.Context, uris []string)
	// DidChangeConfiguration gives the client's new settings, as sent.
	DidChangeConfiguration(ctx context.Context, settings json.RawMessage)

	CodeAction(ctx context.Context, p *CodeActionParams) ([]CodeAction, error)
	ExecuteCommand(ctx context.Context, command string, args []json.RawMessage) (any, error)
	// TextDocumentContent serves workspace/textDocumentContent (LSP 3.18).
	TextDocumentContent(ctx context.Context, uri string) (string, error)
	WorkDoneProgressCancel(ctx context.Context, token ProgressToken)
	// Custom serves the requests whose method starts with CustomPrefix; the
	// result is encoded with encoding/json.
	Custom(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// ErrExitWithoutShutdown is Serve's error when the client sent exit
// without shutdown first; the LSP specification has the server exit with
// code 1 then.
var ErrExitWithoutShutdown = errors.New("lsp: exit without shutdown")

// CustomPrefix marks bcode's own methods.
const CustomPrefix = "bcode/"

// Client is what a server may send to its client.
type Client interface {
	PublishDiagnostics(ctx context.Context, uri string, diags []Diagnostic) error
	// CreateProgress asks the client to create a progress token
	// (window/workDoneProgress/create).
	CreateProgress(ctx context.Context, token ProgressToken) error
	Progress(ctx context.Context, token ProgressToken, v ProgressValue) error
	// ShowDocument asks the client to show uri; it reports whether the
	// client did.
	ShowDocument(ctx context.Context, uri string, takeFocus bool) (bool, error)
	// ShowLocation asks the client to show uri with r selected.
	ShowLocation(ctx context.Context, uri string, r Range) (bool, error)
	ShowMessage(ctx context.Context, t MessageType, msg string) error
	// ShowMessageRequest asks the user to pick one of actions; "" when
	// they dismissed it.
	ShowMessageRequest(ctx context.Context, t MessageType, msg string, actions []string) (string, error)
	LogMessage(ctx context.Context, t MessageType, msg string) error
	// Notify sends a custom notification; params are encoded with
	// encoding/json.
	Notify(ctx context.Context, method string, params any) error
}

// ordered are the notifications handled inline on the read loop, so
// document state changes in exactly the order the client sent it.
var ordered = map[string]bool{
	protocol.MethodInitialized:                     true,
	protocol.MethodTextDocumentDidOpen:             true,
	protocol.MethodTextDocumentDidChange:           true,
	protocol.MethodTextDocumentDidSave:             true,
	protocol.MethodTextDocumentDidClose:            true,
	protocol.MethodWorkspaceDidChangeWatchedFiles:  true,
	protocol.MethodWorkspaceDidChangeConfiguration: true,
	protocol.MethodWindowWorkDoneProgressCancel:    true,
	protocol.MethodExit:                            true,
}

// Serve runs one LSP connection over rwc (Content-Length framing) until the
// client exits, the stream ends or ctx is done. newHandler receives the
// Client for this connection.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, newHandler func(Client) Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	conn := jsonrpc2.NewConn(newGuardStream(jsonrpc2.NewHeaderStream(rwc), log), jsonrpc2.WithCodec(codec{}))
	cl := &client{conn: conn, d: protocol.ClientDispatcher(conn)}
	h := newHandler(cl)
	// exit ends Serve at once: conn.Close waits for the read loop, which
	// may sit in a read of stdin that only the client's end can finish.
	exited := make(chan struct{})
	var once sync.Once
	ps := &protoServer{h: h, closeConn: func() { once.Do(func() { close(exited); go conn.Close() }) }}
	// ServerHandler ignores its fallback handler and sends unknown methods
	// to Server.Request as opaque values, so bcode's own methods are routed
	// here, in front of it, where their raw params are still at hand.
	std := protocol.ServerHandler(ps, nil)
	conn.Go(ctx, protocol.CancelHandler(route(h, std, log)))
	select {
	case <-conn.Done():
	case <-exited:
		if !ps.shutdown.Load() {
			return ErrExitWithoutShutdown
		}
		return nil
	case <-ctx.Done():
		go conn.Close()
		return nil
	}
	err := conn.Err()
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)) {
		return nil
	}
	return err
}

func route(h Handler, std jsonrpc2.Handler, log *slog.Logger) jsonrpc2.Handler {
	return func(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
		method := strings.Clone(req.Method())
		call := req.IsCall()
		defer func() {
			if p := recover(); p != nil {
				log.Error("panic serving request", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				result = nil
				err = nil
				if call {
					err = jsonrpc2.Errorf(jsonrpc2.InternalError, "bcode-ls: internal error serving %s: %v (the server logged the stack; please report it)", method, p)
				}
			}
		}()
		if ordered[method] && !call {
			if _, err := std(ctx, req); err != nil {
				log.Warn("notification failed", "method", method, "err", err)
			}
			return nil, nil
		}
		// Everything else may take time (or call back into the client):
		// release the read loop first.
		jsonrpc2.Async(ctx)
		if strings.HasPrefix(method, CustomPrefix) {
			raw := json.RawMessage(append([]byte(nil), req.Params()...))
			res, err := h.Custom(ctx, method, raw)
			if !call {
				if err != nil {
					log.Warn("notification failed", "method", method, "err", err)
				}
				return nil, nil
			}
			if err != nil {
				return nil, wireError(ctx, err)
			}
			return encodeJSON(res)
		}
		res, err := std(ctx, req)
		if !call {
			if err != nil {
				log.Warn("notification failed", "method", method, "err", err)
			}
			return nil, nil
		}
		if err != nil {
			return nil, wireError(ctx, err)
		}
		return res, nil
	}
}

// encodeJSON encodes v with encoding/json so bcode's own results look the
// same on the wire as in the CLI's --json output.
func encodeJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "encoding the result: %v", err)
	}
	return jsonrpc2.RawMessage(b), nil
}

// wireError maps an error to the JSON-RPC error sent back, keeping the code
// of an *Error and turning cancellation into RequestCancelled.
func wireError(ctx context.Context, err error) error {
	var le *Error
	if errors.As(err, &le) {
		e := jsonrpc2.NewError(jsonrpc2.Code(le.Code), le.Message)
		if len(le.Data) > 0 {
			e.Data = jsonrpc2.RawMessage(le.Data)
		}
		return e
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return jsonrpc2.NewError(CodeRequestCancelled, "request cancelled")
	}
	return jsonrpc2.NewError(CodeRequestFailed, err.Error())
}

// codec is the protocol library's own codec (unexported there): protocol
// values through its union-aware Marshal, pre-encoded values verbatim.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case json.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	}
	return protocol.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	if p, ok := v.(*jsonrpc2.RawMessage); ok {
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	}
	return protocol.Unmarshal(data, v)
}
