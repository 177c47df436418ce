//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// maxTerminalTimeout bounds what the model may ask for.
const maxTerminalTimeout = 30 * time.Minute

// terminal runs one bash command in the worktree. Each command is a fresh
// `bash -c` (no state carries over but the files), in its own process group
// so a timeout kills everything it started.
type terminal struct {
	dir     string
	timeout time.Duration
	cap     int
}

type terminalArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

func (t *terminal) run(ctx context.Context, a terminalArgs) (string, bool) {
	timeout := t.timeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, maxTerminalTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("bash", "-c", a.Command)
	cmd.Dir = t.dir
	cmd.Env = append(os.Environ(), "WORKTREE="+t.dir, "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat")
	cmd.Stdin = nil
	out := &headTail{cap: t.cap}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// After a kill, do not wait forever for grandchildren holding the pipe.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := spawned.start(cmd); err != nil {
		return fmt.Sprintf("could not start bash: %v", err), true
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		spawned.done(cmd.Process.Pid)
		done <- err
	}()
	var err error
	timedOut := false
	select {
	case err = <-done:
	case <-ctx.Done():
		timedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers in the group
	var b bytes.Buffer
	switch {
	case timedOut:
		fmt.Fprintf(&b, "[timed out after %s; the command and everything it started were killed]\n", timeout.Round(time.Second))
	default:
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			fmt.Fprintf(&b, "[error: %v]\n", err)
		}
		fmt.Fprintf(&b, "[exit code %d, %s]\n", code, time.Since(start).Round(time.Millisecond))
	}
	b.WriteString(out.String())
	return b.String(), timedOut || cmd.ProcessState == nil || !cmd.ProcessState.Success()
}

// headTail keeps the first and last cap/2 bytes of a stream and counts what
// is cut between them: the start of a test run names what ran, the end says
// how it ended.
type headTail struct {
	mu   sync.Mutex
	cap  int
	head []byte
	tail []byte
	cut  int64
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	half := h.cap / 2
	if room := half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	h.tail = append(h.tail, p...)
	if over := len(h.tail) - (h.cap - half); over > 0 {
		h.cut += int64(over)
		h.tail = append(h.tail[:0], h.tail[over:]...)
	}
	return n, nil
}

func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cut == 0 {
		return string(h.head) + string(h.tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes cut ...]\n%s", h.head, h.cut, h.tail)
}
