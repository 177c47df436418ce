// Package wire is the protocol between bcode-agent (in the container) and
// the gateway (on the host): JSON-RPC 2.0, one message per line, over the
// agent's stdin and stdout. It is the agent's only channel out of the
// container, so the host side treats every line as untrusted input: lines
// are size-capped, decoded strictly, and a malformed line is answered with a
// JSON-RPC error rather than crashing the reader.
//
// The agent is the client: it calls initialize (the version handshake) and
// then model.chat, agent.observe and agent.finish; the gateway answers.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ProtocolVersion is the version both sides must speak. It changes whenever
// a method or a field changes meaning; a mismatch ends the session at the
// handshake with CodeVersionMismatch.
const ProtocolVersion = 1

// MaxLine is the longest line either side accepts (16 MiB). A model turn with
// a large file view stays far below it; a runaway writer does not get to
// exhaust the reader's memory.
const MaxLine = 16 << 20

// Method names.
const (
	MethodInitialize = "initialize"    // InitializeParams → InitializeResult
	MethodChat       = "model.chat"    // ChatParams → ChatResult
	MethodObserve    = "agent.observe" // ObserveParams → ObserveResult
	MethodFinish     = "agent.finish"  // FinishParams → struct{}
)

// JSON-RPC 2.0's error codes, and bcode's own in the implementation-defined
// range (-32000 to -32099).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603

	// CodeVersionMismatch: the two sides speak different protocol versions.
	CodeVersionMismatch = -32000
	// CodeNotInitialized: a call before the handshake.
	CodeNotInitialized = -32001
	// CodeContextOverflow: the prompt does not fit the model's context;
	// the agent condenses and retries.
	CodeContextOverflow = -32002
	// CodeBudgetSpent: the turn or token budget is spent; the agent stops.
	CodeBudgetSpent = -32003
	// CodeStuck: the same action and observation repeated; the agent stops.
	CodeStuck = -32004
	// CodeModelUnavailable: the model endpoint failed.
	CodeModelUnavailable = -32005
	// CodeViolation: the message broke the protocol (it answers nothing
	// that was asked, repeats an id, names a call that is not pending, or
	// asks to send a secret where it cannot be redacted). The serving side
	// answers it and ends the session.
	CodeViolation = -32006
)

// Message is one JSON-RPC 2.0 message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID and Result or Error).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *ID             `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// IsRequest reports whether m is a request or notification.
func (m *Message) IsRequest() bool { return m.Method != "" }

// ID is a request id: a number or a string (JSON-RPC 2.0 allows both). A
// response to a request whose id could not be read carries a null id.
type ID struct {
	Num   int64
	Str   string
	IsStr bool
}

// NumberID makes a numeric id.
func NumberID(n int64) *ID { return &ID{Num: n} }

func (id ID) String() string {
	if id.IsStr {
		return strconv.Quote(id.Str)
	}
	return strconv.FormatInt(id.Num, 10)
}

// MarshalJSON writes the id as a number or a string.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.IsStr {
		return json.Marshal(id.Str)
	}
	return []byte(strconv.FormatInt(id.Num, 10)), nil
}

// UnmarshalJSON reads an integer or a string id; fractions, objects and
// arrays are refused.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID{Str: s, IsStr: true}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("id %s: must be an integer or a string", truncate(string(b), 40))
	}
	*id = ID{Num: n}
	return nil
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Errorf makes an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the JSON-RPC code of err, or 0 when it is not an *Error.
func CodeOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// Decode reads one line (without its newline) as a message and checks it
// against JSON-RPC 2.0: the version string, exactly one of method or
// result/error, an id on every response. The returned *Error carries the
// code the peer should be answered with (parse error or invalid request);
// when the id was readable the message is returned alongside the error so
// the answer can name it.
func Decode(line []byte) (*Message, *Error) {
	if len(line) > MaxLine {
		return nil, Errorf(CodeInvalidRequest, "line of %d bytes exceeds the %d-byte limit", len(line), MaxLine)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, Errorf(CodeInvalidRequest, "empty line")
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, Errorf(CodeParseError, "not a JSON-RPC message: %s", truncate(err.Error(), 200))
	}
	if dec.More() {
		return nil, Errorf(CodeParseError, "trailing data after the JSON object")
	}
	if m.JSONRPC != "2.0" {
		return &m, Errorf(CodeInvalidRequest, "jsonrpc must be \"2.0\", got %q", truncate(m.JSONRPC, 20))
	}
	hasResult := m.Result != nil || m.Error != nil
	switch {
	case m.Method != "" && hasResult:
		return &m, Errorf(CodeInvalidRequest, "a message is a request or a response, not both")
	case m.Method == "" && !hasResult:
		return &m, Errorf(CodeInvalidRequest, "message has neither a method nor a result or error")
	case m.Method == "" && m.ID == nil && m.Error == nil:
		return &m, Errorf(CodeInvalidRequest, "response without an id")
	case m.Result != nil && m.Error != nil:
		return &m, Errorf(CodeInvalidRequest, "response has both a result and an error")
	}
	if m.Params != nil {
		p := bytes.TrimSpace(m.Params)
		if len(p) == 0 || (p[0] != '{' && p[0] != '[') {
			return &m, Errorf(CodeInvalidRequest, "params must be an object or an array")
		}
	}
	return &m, nil
}

// Encode writes m as one line, newline included. encoding/json escapes
// U+2028 and U+2029 and never emits a raw newline inside a string, so the
// line framing cannot be broken by content.
func Encode(m *Message) ([]byte, error) {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxLine {
		return nil, fmt.Errorf("message of %d bytes exceeds the %d-byte line limit", len(b), MaxLine)
	}
	return append(b, '\n'), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
