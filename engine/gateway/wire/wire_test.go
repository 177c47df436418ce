package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		line string
		code int
	}{
		{`not json`, CodeParseError},
		{`{"jsonrpc":"2.0","method":"x"} {"again":1}`, CodeParseError},
		{`{"jsonrpc":"1.0","id":1,"method":"x"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1.5,"method":"x"}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":{},"method":"x"}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":3}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"x","extra":true}`, CodeParseError},
		{`   `, CodeInvalidRequest},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.line))
		if err == nil {
			t.Errorf("Decode(%s): accepted", c.line)
			continue
		}
		if err.Code != c.code {
			t.Errorf("Decode(%s): code %d (%s), want %d", c.line, err.Code, err.Message, c.code)
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"model.chat","params":{"messages":[]}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"initialize"}`,
		`{"jsonrpc":"2.0","method":"note","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`,
	} {
		m, err := Decode([]byte(line))
		if err != nil {
			t.Errorf("Decode(%s): %v", line, err)
			continue
		}
		b, eerr := Encode(m)
		if eerr != nil {
			t.Fatal(eerr)
		}
		if _, err := Decode(bytes.TrimSuffix(b, []byte("\n"))); err != nil {
			t.Errorf("re-decoding %s: %v", b, err)
		}
	}
}

// pipePair connects a client and a server Conn over in-memory pipes.
func pipePair(t *testing.T) (client, server *Conn, closeAll func()) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	client = NewConn(cr, cw)
	server = NewConn(sr, sw)
	return client, server, func() { cw.Close(); sw.Close() }
}

func TestCallAndServe(t *testing.T) {
	client, server, closeAll := pipePair(t)
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, func(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
			switch method {
			case MethodInitialize:
				var p InitializeParams
				if err := json.Unmarshal(params, &p); err != nil {
					return nil, Errorf(CodeInvalidParams, "%v", err)
				}
				if p.ProtocolVersion != ProtocolVersion {
					return nil, Errorf(CodeVersionMismatch, "gateway speaks %d, agent %d", ProtocolVersion, p.ProtocolVersion)
				}
				return InitializeResult{ProtocolVersion: ProtocolVersion, Task: "fix it\nnow"}, nil
			}
			return nil, Errorf(CodeMethodNotFound, "no method %s", method)
		})
	}()
	var res InitializeResult
	if err := client.Call(ctx, MethodInitialize, InitializeParams{ProtocolVersion: ProtocolVersion}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Task != "fix it\nnow" {
		t.Errorf("task %q", res.Task)
	}
	err := client.Call(ctx, MethodInitialize, InitializeParams{ProtocolVersion: ProtocolVersion + 1}, &res)
	if CodeOf(err) != CodeVersionMismatch {
		t.Errorf("version mismatch: got %v", err)
	}
	err = client.Call(ctx, "nope", struct{}{}, nil)
	if CodeOf(err) != CodeMethodNotFound {
		t.Errorf("unknown method: got %v", err)
	}
	closeAll()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestServeViolations: a well-formed request is answered; anything a
// well-behaved client would not send (garbage, a response, a notification,
// a repeated or decreasing id, a string id) is answered with
// CodeViolation and ends Serve with a *ViolationError.
func TestServeViolations(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	for _, tt := range []struct {
		name, line, kind string
	}{
		{"garbage", `garbage`, "malformed"},
		{"params not an object", `{"jsonrpc":"2.0","id":6,"method":"x","params":"str"}`, "malformed"},
		{"unsolicited response", `{"jsonrpc":"2.0","id":6,"result":{}}`, "unsolicited_response"},
		{"error response with a guessed id", `{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"}}`, "unsolicited_response"},
		{"notification", `{"jsonrpc":"2.0","method":"agent.observe","params":{}}`, "notification"},
		{"duplicate id", `{"jsonrpc":"2.0","id":5,"method":"ping"}`, "duplicate_id"},
		{"lower id", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, "duplicate_id"},
		{"string id", `{"jsonrpc":"2.0","id":"6","method":"ping"}`, "duplicate_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := ok + "\n" + tt.line + "\n" + `{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n"
			var out bytes.Buffer
			c := NewConn(strings.NewReader(in), &out)
			calls := 0
			err := c.Serve(context.Background(), func(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
				calls++
				return map[string]string{"pong": method}, nil
			})
			var ve *ViolationError
			if !errors.As(err, &ve) || ve.Kind != tt.kind || !errors.Is(err, ErrViolation) {
				t.Fatalf("Serve: %v, want a %s violation", err, tt.kind)
			}
			if calls != 1 {
				t.Errorf("%d requests handled, want only the one before the violation", calls)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"jsonrpc":"2.0","id":5,"result":{"pong":"ping"}}`) || !strings.Contains(lines[1], `"code":-32006`) {
				t.Errorf("responses:\n%s", out.String())
			}
		})
	}
	// A handler's CodeViolation ends Serve too.
	var out bytes.Buffer
	c := NewConn(strings.NewReader(ok+"\n"+`{"jsonrpc":"2.0","id":6,"method":"ping"}`+"\n"), &out)
	err := c.Serve(context.Background(), func(context.Context, string, json.RawMessage) (any, *Error) {
		return nil, Errorf(CodeViolation, "no")
	})
	if !errors.Is(err, ErrViolation) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("handler violation: %v\n%s", err, out.String())
	}
}

func TestReadLineTooLong(t *testing.T) {
	long := strings.Repeat("a", MaxLine+10)
	c := NewConn(strings.NewReader(long+"\n"+`{"x":1}`+"\n"), io.Discard)
	if _, err := c.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("got %v, want ErrLineTooLong", err)
	}
	l, err := c.ReadLine()
	if err != nil || string(l) != `{"x":1}` {
		t.Fatalf("next line: %q %v (the stream should stay in step)", l, err)
	}
}

func TestEncodeKeepsOneLine(t *testing.T) {
	raw, _ := json.Marshal(ChatMessage{Role: "tool", Content: "a\nb\u2028c\r\n"})
	b, err := Encode(&Message{ID: NumberID(1), Result: raw})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte("\n")) != 1 || bytes.Contains(b, []byte("\u2028")) {
		t.Errorf("encoded message is not one line: %q", b)
	}
}

func TestCallPeerClosed(t *testing.T) {
	c := NewConn(strings.NewReader(""), io.Discard)
	err := c.Call(context.Background(), MethodChat, ChatParams{}, nil)
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("got %v", err)
	}
}

// FuzzWireDecode: no input makes Decode panic, and whatever it accepts
// survives an encode/decode round trip unchanged.
func FuzzWireDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1}}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m","data":[1]}}`,
		`{"jsonrpc":"2.0","method":"n"}`,
		`{"jsonrpc":"2.0","id":99999999999999999999,"method":"x"}`,
		"",
		"{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			if err.Code == 0 || err.Message == "" {
				t.Fatalf("error without code or message: %+v", err)
			}
			return
		}
		b, eerr := Encode(m)
		if eerr != nil {
			t.Fatalf("accepted message does not encode: %v", eerr)
		}
		m2, err2 := Decode(bytes.TrimSuffix(b, []byte("\n")))
		if err2 != nil {
			t.Fatalf("round trip of %q failed: %v", b, err2)
		}
		b2, _ := Encode(m2)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the message:\n%s\n%s", b, b2)
		}
	})
}
