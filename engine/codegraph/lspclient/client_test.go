package lspclient

import (
	"bufio"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
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

// TestIdleServerIsAbandoned: a "server" that reads every request and never
// answers uses no CPU time: after StallLimit the call ends with ErrStalled,
// long before the caller's own (wall-clock) deadline.
func TestIdleServerIsAbandoned(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stall watch reads /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	_, _, err := Start(ctx, [][]string{{"sh", "-c", "cat >/dev/null"}}, t.TempDir())
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("Start against a server that never answers: %v, want ErrStalled", err)
	}
	t.Logf("abandoned after %s", time.Since(start).Round(time.Millisecond))
}
