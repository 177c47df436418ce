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
	// StepTurns holds the agent between turns until Session.NextTurn (see
	// Session.StepTurns).
	StepTurns bool
}

// Running is an agent process serving a session.
type Running struct {
	// Session is the gateway side; with AgentSpec.StepTurns the caller
	// drives it with NextTurn.
	Session *Session
	cancel  context.CancelFunc
	done    chan struct{}
	out     Outcome
	err     error
}

// Wait blocks until the agent has exited and returns how the session ended.
func (r *Running) Wait() (Outcome, error) {
	<-r.done
	return r.out, r.err
}

// Stop ends the session: the agent's pending call fails, it finishes, and
// the process is killed if it does not exit. Wait returns afterwards.
func (r *Running) Stop() { r.cancel() }

// Run opens a session (refusing a model whose context is too small before
// anything starts), starts the agent, serves it until it exits, and
// returns how the session ended. The agent process is gone when Run
// returns, whatever happened.
func (a *AgentProcess) Run(ctx context.Context, spec AgentSpec) (Outcome, error) {
	r, err := a.Start(ctx, spec)
	if err != nil {
		return Outcome{}, err
	}
	return r.Wait()
}

// Start opens the session and starts the agent; Wait collects it.
func (a *AgentProcess) Start(ctx context.Context, spec AgentSpec) (*Running, error) {
	if len(a.Command) == 0 {
		return nil, errors.New("gateway: no bcode-agent command")
	}
	sess, err := a.Gateway.Open(ctx, spec.Session)
	if err != nil {
		return nil, err
	}
	if spec.StepTurns {
		sess.StepTurns()
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = spec.Session.Budgets.WallClock
	}
	runCtx, cancel := context.WithCancel(ctx)
	var cancelT context.CancelFunc = func() {}
	if timeout > 0 {
		runCtx, cancelT = context.WithTimeout(runCtx, timeout)
	}
	// stdin is an OS pipe: the runner passes the file to the process and
	// does not wait on a copy, so the process's exit never depends on us
	// closing our end first.
	inR, inW, err := os.Pipe()
	if err != nil {
		cancelT()
		cancel()
		return nil, fmt.Errorf("gateway: stdin pipe: %w", err)
	}
	outR, outW := io.Pipe()
	args := append(append([]string(nil), a.Command...), "--worktree", spec.Worktree)
	type ran struct {
		res sandbox.Result
		err error
	}
	exited := make(chan ran, 1)
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
		exited <- ran{res, err}
	}()
	r := &Running{Session: sess, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer cancel()
		defer cancelT()
		var once sync.Once
		closeIn := func() { once.Do(func() { inW.Close() }) }
		out, serveErr := sess.Serve(runCtx, outR, inW)
		closeIn()
		// Serve ends at the agent's EOF (it exited) or on a protocol
		// failure; in the second case the agent may still run.
		if serveErr != nil {
			cancel()
		}
		_, _ = io.Copy(io.Discard, outR)
		res := <-exited
		inR.Close()
		r.out = out
		switch {
		case serveErr != nil && ctx.Err() == nil && runCtx.Err() == nil:
			r.err = fmt.Errorf("gateway: session with bcode-agent: %w", serveErr)
		case res.err != nil && ctx.Err() == nil && runCtx.Err() != nil:
			if r.out.Reason == "agent_exited" || r.out.Reason == "" {
				r.out.Reason = "timeout"
			}
		case res.err != nil && ctx.Err() == nil:
			r.err = fmt.Errorf("gateway: running bcode-agent: %w", res.err)
		case res.err != nil:
			r.err = res.err
		case res.res.TimedOut:
			r.out.Reason = "timeout"
		case r.out.Reason == "agent_exited" && res.res.ExitCode != 0:
			r.out.Summary = fmt.Sprintf("bcode-agent exited with status %d: %s", res.res.ExitCode, lastLine(res.res.Stderr))
		}
	}()
	return r, nil
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
