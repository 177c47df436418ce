package lspclient

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
)

// FuzzReadMessage feeds the Content-Length framing arbitrary bytes, as a
// broken or hostile language server could send: it must return a message or
// an error, never panic or read past what it was given.
func FuzzReadMessage(f *testing.F) {
	frame := func(body string) []byte { return []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)) }
	f.Add(frame(`{"jsonrpc":"2.0","id":1,"result":null}`))
	f.Add(append(frame(`{}`), frame(`{"jsonrpc":"2.0","method":"x"}`)...))
	f.Add([]byte("Content-Length: 5\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\nhello"))
	f.Add([]byte("Content-Length: -1\r\n\r\n"))
	f.Add([]byte("Content-Length: 99999999999999999999\r\n\r\nx"))
	f.Add([]byte("content-length: 2\n\n{}"))
	f.Add([]byte("\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for i := 0; i < 4; i++ {
			msg, err := ReadMessage(r)
			if err != nil {
				return
			}
			if len(msg) > len(data) {
				t.Fatalf("message of %d bytes from %d bytes of input", len(msg), len(data))
			}
		}
	})
}
