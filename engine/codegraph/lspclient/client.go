// Package lspclient is a small Language Server Protocol client: JSON-RPC
// 2.0 over a server's stdin/stdout with Content-Length framing, and the few
// requests the context pack needs from a language server (documentSymbol,
// references, callHierarchy). It is written by hand so that only bcode's
// own LSP server imports the LSP libraries.
package lspclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// Client talks to one language server process.
type Client struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	closed  bool
	done    chan struct{}
	readErr error
	stderr  *tailBuffer
	stalled chan struct{} // closed by watch
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// RPCError is an error the server answered with.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("lsp error %d: %s", e.Code, e.Message) }

// ErrNoServer is returned by Start when none of the commands is installed.
var ErrNoServer = errors.New("no language server found")

// Start runs the first of commands whose program is on PATH, in rootDir,
// and initialises it for that workspace. The error wraps ErrNoServer when
// none is installed.
func Start(ctx context.Context, commands [][]string, rootDir string) (*Client, []string, error) {
	var argv []string
	for _, c := range commands {
		if len(c) == 0 {
			continue
		}
		if p, err := exec.LookPath(c[0]); err == nil {
			argv = append([]string{p}, c[1:]...)
			break
		}
	}
	if argv == nil {
		var names []string
		for _, c := range commands {
			if len(c) > 0 {
				names = append(names, c[0])
			}
		}
		return nil, nil, fmt.Errorf("%w on PATH (tried %s)", ErrNoServer, strings.Join(names, ", "))
	}
	abs, err := filepath.Abs(rootDir)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = abs
	scratch.Own(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	c := &Client{cmd: cmd, stdin: stdin, pending: map[int64]chan response{}, done: make(chan struct{}), stderr: &tailBuffer{max: 4096}, stalled: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	go c.readLoop(bufio.NewReader(stdout))
	go c.watch(cmd.Process.Pid)
	root := FileURI(abs)
	init := map[string]any{
		"processId": nil,
		"rootUri":   root,
		"workspaceFolders": []map[string]string{
			{"uri": root, "name": filepath.Base(abs)},
		},
		"capabilities": map[string]any{
			"textDocument": map[string]any{
				"documentSymbol": map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"callHierarchy":  map[string]any{},
				"references":     map[string]any{},
			},
			"workspace": map[string]any{"workspaceFolders": true, "configuration": true},
		},
	}
	if err := c.Call(ctx, "initialize", init, nil); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("initialising %s: %w", argv[0], err)
	}
	if err := c.Notify("initialized", map[string]any{}); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, argv, nil
}

// Call sends a request and decodes its result into result (which may be nil).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("language server connection closed")
	}
	c.nextID++
	id := c.nextID
	ch := make(chan response, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		_ = c.Notify("$/cancelRequest", map[string]any{"id": id})
		return ctx.Err()
	case <-c.done:
		return fmt.Errorf("language server exited: %v (stderr: %s)", c.readErr, c.stderr.String())
	case <-c.stalled:
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ErrStalled)
	case r := <-ch:
		if r.Error != nil {
			return r.Error
		}
		if result != nil && len(r.Result) > 0 {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	}
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	return c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (c *Client) write(msg any) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := fmt.Fprintf(c.stdin, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return err
	}
	_, err = c.stdin.Write(body)
	return err
}

// readLoop reads framed messages: responses go to their callers; requests
// from the server get a minimal answer so it never waits on us.
func (c *Client) readLoop(r *bufio.Reader) {
	defer func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
	}()
	for {
		body, err := ReadMessage(r)
		if err != nil {
			c.readErr = err
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			response
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			continue
		}
		switch {
		case msg.Method != "" && len(msg.ID) > 0:
			c.answerServerRequest(msg.ID, msg.Method, msg.Params)
		case msg.Method == "" && len(msg.ID) > 0:
			id, err := strconv.ParseInt(string(msg.ID), 10, 64)
			if err != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- msg.response
			}
		}
	}
}

func (c *Client) answerServerRequest(id json.RawMessage, method string, params json.RawMessage) {
	var result any
	if method == "workspace/configuration" {
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		_ = json.Unmarshal(params, &p)
		result = make([]any, len(p.Items))
	}
	_ = c.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// ReadMessage reads one Content-Length framed message.
func ReadMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 || n > 256<<20 {
				return nil, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("message without Content-Length")
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// Close asks the server to shut down and exit, and kills it if it does not
// within two seconds.
func (c *Client) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.Call(ctx, "shutdown", nil, nil)
	_ = c.Notify("exit", nil)
	_ = c.stdin.Close()
	waited := make(chan error, 1)
	go func() { waited <- c.cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
		_ = c.cmd.Process.Kill()
		<-waited
	}
	return nil
}

// FileURI is the file:// URI of an absolute path.
func FileURI(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// URIPath is the path of a file:// URI.
func URIPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("not a file URI: %q", uri)
	}
	return filepath.FromSlash(u.Path), nil
}

// tailBuffer keeps the last max bytes written to it (the server's stderr,
// for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
