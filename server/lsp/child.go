package lsp

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ChildOptions say how to start a language server as a child process.
type ChildOptions struct {
	// Args follow the binary's path (bcode-ls: "--stdio" and its flags).
	Args []string
	// Env is added to this process's environment.
	Env []string
	SessionOptions
}

// Child is a language server running as a child process, and a
// ClientSession over its stdin and stdout. Its stderr is kept, the last
// 8 KiB of it, for error messages.
type Child struct {
	*ClientSession

	cmd  *exec.Cmd
	log  *tailBuffer
	wait sync.Once // cmd.Wait, once: it closes stdout, so only when the child is done
	err  error     // cmd.Wait's
}

// childStdio is the child's stdout and stdin as one connection.
type childStdio struct {
	io.Reader
	io.WriteCloser
}

// StartChild starts the server at path and a session with it.
func StartChild(ctx context.Context, path string, opts ChildOptions) (*Child, error) {
	cmd := exec.Command(path, opts.Args...)
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Child{cmd: cmd, log: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = c.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", path, err)
	}
	c.ClientSession = NewClientSession(ctx, childStdio{Reader: out, WriteCloser: in}, opts.SessionOptions)
	return c, nil
}

// Process is the child process, for signals and /proc.
func (c *Child) Process() *os.Process { return c.cmd.Process }

// Wait waits for the child to exit and returns how it did. It closes the
// child's stdout, so it belongs after the last read.
func (c *Child) Wait() error {
	c.wait.Do(func() { c.err = c.cmd.Wait() })
	return c.err
}

// Stop shuts the server down politely, then, after timeout, for certain,
// and closes the connection.
func (c *Child) Stop(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c.Shutdown(ctx)
	exited := make(chan struct{})
	go func() { _ = c.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-exited
	}
	c.Conn.Close()
}

// LogTail is the end of what the child wrote to stderr, introduced for an
// error message, or "" when it wrote nothing.
func (c *Child) LogTail() string {
	t := strings.TrimSpace(c.log.String())
	if t == "" {
		return ""
	}
	return "\nbcode-ls said:\n" + t
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
