package lspclient

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestReadMessageFraming(t *testing.T) {
	in := "Content-Length: 7\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n{}"
	r := bufio.NewReader(strings.NewReader(in))
	for _, want := range []string{`{"a":1}`, `{}`} {
		got, err := ReadMessage(r)
		if err != nil || string(got) != want {
			t.Fatalf("ReadMessage = %q, %v; want %q", got, err, want)
		}
	}
	for _, bad := range []string{"Content-Type: x\r\n\r\n{}", "Content-Length: -3\r\n\r\n", "Content-Length: 10\r\n\r\n{}"} {
		if _, err := ReadMessage(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("ReadMessage(%q) accepted a bad frame", bad)
		}
	}
}

func TestStartWithoutServer(t *testing.T) {
	_, _, err := Start(context.Background(), [][]string{{"bcode-no-such-server"}}, t.TempDir())
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "bcode-no-such-server") {
		t.Fatalf("err = %v, want ErrNoServer naming the command", err)
	}
}

func TestURIRoundTrip(t *testing.T) {
	uri := FileURI("/tmp/a dir/x.py")
	if uri != "file:///tmp/a%20dir/x.py" {
		t.Fatalf("FileURI = %q", uri)
	}
	if p, err := URIPath(uri); err != nil || p != "/tmp/a dir/x.py" {
		t.Fatalf("URIPath = %q, %v", p, err)
	}
}
