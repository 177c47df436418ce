package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// AgentProcess runs bcode-agent through a sandbox.Runner with its stdin and
// stdout wired to a gateway session: the piece the task runner plugs in.
// With sandbox/host it is a host process (tests, and `bcode task run
// --sandbox=host` if that ever exists); with the Docker runner it is the
// container's main process with stdin and stdout attached.
//
// The runner must stream: Command.Stdin is read while the process runs (it
// is an *os.File, so the host runner hands it over directly) and
// Command.Stdout receives output as it is written.
type AgentProcess struct {
	Gateway *Gateway
	Runner  sandbox.Runner
	// Command is bcode-agent's argv inside the sandbox; "--worktree DIR" is
	// appended.
	Command []string
	// Env is added to the runner's scrubbed environment. No key is ever
	// put here: the agent has none to use.
	Env []string
	// Timeout bounds the whole session (0: the task's wall clock).
	Timeout time.Duration
	// Stderr receives the agent's log (may be nil).
	Stderr io.Writer
}

// AgentSpec is one attempt as the runner hands it over.
type AgentSpec struct {
	Session SessionSpec
	// Worktree is the attempt's worktree as the sandbox sees it.
	Worktree string
}

// NewAgentProcess is the constructor the runner uses.
func NewAgentProcess(g *Gateway, runner sandbox.Runner, command ...string) *AgentProcess {
	return &AgentProcess{Gateway: g, Runner: runner, Command: command}
}

// Run opens a session (refusing a model whose context is too small before
// anything starts), starts the agent, serves it until it exits, and
// returns how the session ended. The agent process is gone when Run
// returns, whatever happened.
func (a *AgentProcess) Run(ctx context.Context, spec AgentSpec) (Outcome, error) {
	if len(a.Command) == 0 {
		return Outcome{}, errors.New("gateway: no bcode-agent command")
	}
	sess, err := a.Gateway.Open(ctx, spec.Session)
	if err != nil {
		return Outcome{}, err
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = spec.Session.Budgets.WallClock
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if timeout > 0 {
		runCtx, cancel = context.WithTimeout(runCtx, timeout)
		defer cancel()
	}

	// stdin is an OS pipe: the runner passes the file to the process and
	// does not wait on a copy, so the process's exit never depends on us
	// closing our end first.
	inR, inW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("gateway: stdin pipe: %w", err)
	}
	outR, outW := io.Pipe()
	args := append(append([]string(nil), a.Command...), "--worktree", spec.Worktree)
	type ran struct {
		res sandbox.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := a.Runner.Run(runCtx, sandbox.Command{
			Dir:         spec.Worktree,
			Args:        args,
			Env:         a.Env,
			Stdin:       inR,
			Stdout:      outW,
			Stderr:      a.Stderr,
			OutputLimit: 64 << 10, // the stream is teed to us; keep little
		})
		outW.Close()
		done <- ran{res, err}
	}()
	var once sync.Once
	closeIn := func() { once.Do(func() { inW.Close() }) }
	defer closeIn()

	out, serveErr := sess.Serve(runCtx, outR, inW)
	closeIn()
	// Serve ends at the agent's EOF (it exited) or on a protocol failure;
	// in the second case the agent may still run: cancel and wait.
	if serveErr != nil {
		cancel()
	}
	_, _ = io.Copy(io.Discard, outR)
	r := <-done
	inR.Close()
	switch {
	case serveErr != nil:
		return out, fmt.Errorf("gateway: session with bcode-agent: %w", serveErr)
	case r.err != nil && ctx.Err() == nil && runCtx.Err() != nil:
		out.Reason = "timeout"
		return out, nil
	case r.err != nil:
		return out, fmt.Errorf("gateway: running bcode-agent: %w", r.err)
	case r.res.TimedOut:
		out.Reason = "timeout"
	case out.Reason == "agent_exited" && r.res.ExitCode != 0:
		out.Summary = fmt.Sprintf("bcode-agent exited with status %d: %s", r.res.ExitCode, lastLine(r.res.Stderr))
	}
	return out, nil
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
