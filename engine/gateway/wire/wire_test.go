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

// TestServeMalformedLines: garbage gets error responses with a null id and
// the loop keeps serving; after many bad lines in a row it gives up.
func TestServeMalformedLines(t *testing.T) {
	in := strings.Join([]string{
		`garbage`,
		`{"jsonrpc":"2.0","id":3,"method":"x","params":"str"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	c := NewConn(strings.NewReader(in), &out)
	err := c.Serve(context.Background(), func(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
		return map[string]string{"pong": method}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d responses:\n%s", len(lines), out.String())
	}
	want := []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32600`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600`,
		`{"jsonrpc":"2.0","id":5,"result":{"pong":"ping"}}`,
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("response %d = %s, want prefix %s", i, lines[i], w)
		}
	}

	out.Reset()
	c = NewConn(strings.NewReader(strings.Repeat("x\n", 40)), &out)
	err = c.Serve(context.Background(), func(context.Context, string, json.RawMessage) (any, *Error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), "malformed lines") {
		t.Errorf("Serve on garbage: %v", err)
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
