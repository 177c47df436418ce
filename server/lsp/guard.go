package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"

	"go.lsp.dev/jsonrpc2"

	"github.com/bcode-dev/bcode/sandbox/shown"
)

// frameStream is the raw-frame side of jsonrpc2's built-in framers.
type frameStream interface {
	ReadFrame(ctx context.Context) ([]byte, int64, error)
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}

// guardStream checks every frame before jsonrpc2 decodes it. With
// jsonrpc2 v1.0.1 a frame the connection cannot decode, or a notification
// whose handler fails ($/cancelRequest with an object id), ends the read
// loop and with it the server, losing whatever it was running. A malformed
// request whose id can be read is answered with InvalidRequest (or
// ParseError), as JSON-RPC 2.0 asks; anything else is logged and dropped.
//
// It deliberately hides the raw-frame methods from the connection: LSP has
// no batches, so the single-message path is all a client can use.
type guardStream struct {
	frames frameStream
	inner  jsonrpc2.Stream
	log    *slog.Logger
}

func newGuardStream(s jsonrpc2.Stream, log *slog.Logger) jsonrpc2.Stream {
	fs, ok := s.(frameStream)
	if !ok {
		return s
	}
	return &guardStream{frames: fs, inner: s, log: log}
}

// Write is the one way out to the editor: every message is encoded, then
// every string in it (results, diagnostics, progress, messages, error
// texts, ids) is rewritten into the form shown.Text gives it, so that no
// control, escape sequence, bidi override or invisible character from the
// worktree, a test run or the model reaches the editor's hovers, panels
// and diagnostics however a feature built its message.
func (s *guardStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	body, err := jsonrpc2.EncodeMessage(msg)
	if err != nil {
		return 0, err
	}
	return s.writeFrame(ctx, body)
}

func (s *guardStream) writeFrame(ctx context.Context, body []byte) (int64, error) {
	shownBody, err := shown.JSONText(body)
	if err != nil {
		return 0, fmt.Errorf("lsp: an outgoing message is not JSON: %w", err)
	}
	return s.frames.WriteFrame(ctx, shownBody)
}

func (s *guardStream) Close() error { return s.inner.Close() }

// Read returns the next well-formed message. Only an error of the stream
// itself (end of input, a broken header) ends the connection: after a
// header error the stream cannot find the next frame.
func (s *guardStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		body, n, err := s.frames.ReadFrame(ctx)
		if err != nil {
			return nil, 0, err
		}
		if reply, err := checkFrame(body); err != nil {
			s.log.Warn("dropping a malformed message", "err", err, "message", clip(body))
			if reply != nil {
				if _, werr := s.writeFrame(ctx, reply); werr != nil {
					return nil, 0, werr
				}
			}
			continue
		}
		msg, err := jsonrpc2.DecodeMessage(body)
		if err != nil {
			s.log.Warn("dropping a message jsonrpc2 cannot decode", "err", err, "message", clip(body))
			continue
		}
		return msg, n, nil
	}
}

var integerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// validID reports whether raw is an id JSON-RPC allows: a string or an
// integer (null only marks a notification, handled by the caller).
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	return integerID.Match(raw)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// checkFrame returns an error for a frame bcode-ls will not hand to
// jsonrpc2, with the error response to send when the sender can match it
// to a request (nil otherwise).
func checkFrame(body []byte) (reply []byte, err error) {
	var m map[string]json.RawMessage
	if jerr := json.Unmarshal(body, &m); jerr != nil || m == nil {
		code, msg := jsonrpc2.InvalidRequest, "not a JSON-RPC message object"
		if !json.Valid(body) {
			code, msg = jsonrpc2.ParseError, "not valid JSON"
		}
		return errorFrame(nil, code, msg), errors.New(msg)
	}
	id, hasID := m["id"]
	if hasID && isNull(id) {
		hasID = false
	}
	idOK := hasID && validID(id)
	answer := func(code jsonrpc2.Code, msg string) ([]byte, error) {
		if !hasID {
			return nil, errors.New(msg) // a notification gets no reply
		}
		if !idOK {
			return errorFrame(nil, code, msg), errors.New(msg)
		}
		return errorFrame(id, code, msg), errors.New(msg)
	}
	if hasID && !idOK {
		return answer(jsonrpc2.InvalidRequest, "id must be a string or an integer")
	}
	var version string
	if v, ok := m["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return answer(jsonrpc2.InvalidRequest, `"jsonrpc" must be "2.0"`)
	}
	rawMethod, isRequest := m["method"]
	if !isRequest {
		// A response to one of the server's own calls.
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if !hasID || hasResult == hasError {
			return nil, errors.New("a response needs an id and exactly one of result or error")
		}
		return nil, nil
	}
	var method string
	if json.Unmarshal(rawMethod, &method) != nil {
		return answer(jsonrpc2.InvalidRequest, `"method" must be a string`)
	}
	if _, ok := m["result"]; ok {
		return answer(jsonrpc2.InvalidRequest, "a request cannot carry a result")
	}
	if _, ok := m["error"]; ok {
		return answer(jsonrpc2.InvalidRequest, "a request cannot carry an error")
	}
	// Params of the wrong shape are the method's to refuse: its own
	// InvalidParams error names the field.
	if method == "$/cancelRequest" {
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m["params"], &p) != nil || !validID(p.ID) {
			return answer(jsonrpc2.InvalidParams, "$/cancelRequest needs params.id, a string or an integer")
		}
	}
	return nil, nil
}

// errorFrame encodes an error response; id nil is JSON null, for a
// request whose id could not be read.
func errorFrame(id json.RawMessage, code jsonrpc2.Code, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{int64(code), "bcode-ls: " + msg}})
	return b
}

// clip keeps a log line short whatever a client sends.
func clip(b []byte) string {
	const max = 200
	if len(b) <= max {
		return string(b)
	}
	return fmt.Sprintf("%s… (%d bytes)", b[:max], len(b))
}
