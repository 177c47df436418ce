// Package runneragent plugs bcode-agent into the task runner: it implements
// engine/agent's Agent (the seam under the runner) by starting bcode-agent through a sandbox.Runner,
// its stdio wired to a gateway session, and steps the session one turn per
// agent.Session.Turn so the runner's checkpoint commit never races the
// agent's next edit.
//
// It is its own package so that engine/gateway does not import
// engine/agent; neither imports engine/runner, which sits above them.
package runneragent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/sandbox"
)

// Agent is agent.Agent backed by bcode-agent and the gateway.
type Agent struct {
	Gateway *gateway.Gateway
	// Runner starts the agent: sandbox/host in tests, the Docker runner in
	// the product (bcode-agent as the container's process, stdin and
	// stdout attached).
	Runner sandbox.Runner
	// Command is bcode-agent's argv in the sandbox.
	Command []string
	// Events reads the ledger's event log, to resume an interrupted
	// attempt from its conversation; nil: attempts always start fresh.
	Events gateway.EventReader
	// Canaries returns the task's canary secrets (planted so a leak is
	// detectable); nil: none.
	Canaries func(taskID string) []string
	// Secrets keeps the task's secrets across attempts: this attempt's
	// canaries are added to it, every earlier attempt's (and every secret
	// a scan found earlier in the task) are redacted too, and what this
	// attempt's scans find is added. nil: this attempt's values only.
	Secrets gateway.SecretStore
	// Environ is the host environment whose secret-looking values are
	// redacted (nil: os.Environ()).
	Environ []string
	// Env is added to the sandbox's environment for the agent.
	Env    []string
	Stderr io.Writer
}

// New returns an Agent; the runner's wiring calls it.
func New(g *gateway.Gateway, r sandbox.Runner, command ...string) *Agent {
	return &Agent{Gateway: g, Runner: r, Command: command}
}

var _ agent.Agent = (*Agent)(nil)

// StartAttempt implements agent.Agent: it checks the model (a context
// window below the minimum is refused here, with the reason), starts
// bcode-agent, and returns a session that runs one agent turn per Turn.
func (a *Agent) StartAttempt(ctx context.Context, in agent.AttemptInput) (agent.Session, error) {
	environ := a.Environ
	if environ == nil {
		environ = os.Environ()
	}
	known := append(gateway.SecretsFromEnv(environ), a.Gateway.Secrets...)
	var canaries []string
	if a.Canaries != nil {
		canaries = a.Canaries(in.Task.ID)
		known = append(known, canaries...)
	}
	if a.Secrets != nil {
		// The canaries are stored before the agent can see them, so a
		// runner that dies mid-attempt leaves them known to the next.
		if err := a.Secrets.AddSecrets(in.Task.ID, canaries...); err != nil {
			return nil, err
		}
		earlier, err := a.Secrets.Secrets(in.Task.ID)
		if err != nil {
			return nil, err
		}
		known = append(known, earlier...)
	}
	paths := gateway.DefaultHostPaths(in.Worktree, in.Task.Repo)
	if f, ok := in.Ledger.(interface{ Path() string }); ok && f.Path() != "" {
		paths = append(paths, gateway.StateHostPaths(filepath.Dir(f.Path()), f.Path())...)
	}
	red, err := gateway.NewRedactor(known, paths)
	if err != nil {
		return nil, err
	}
	if store, task := a.Secrets, in.Task.ID; store != nil {
		red.OnLearn = func(values []string) { _ = store.AddSecrets(task, values...) }
	}
	spec := gateway.SessionSpec{
		Lease:    in.Lease,
		Attempt:  in.Attempt.ID,
		Task:     TaskPrompt(in),
		Budgets:  in.Task.Budgets,
		Redactor: red,
	}
	if prev := resumable(in.History); prev != nil && a.Events != nil {
		tr, err := gateway.LoadTranscript(ctx, a.Events, in.Task.ID, prev.ID)
		if err != nil {
			return nil, err
		}
		if len(tr.Messages) > 0 && !tr.Finished {
			spec.Resume = tr
		}
	}
	proc := &gateway.AgentProcess{Gateway: a.Gateway, Runner: a.Runner, Command: a.Command, Env: a.Env, Stderr: a.Stderr}
	running, err := proc.Start(ctx, gateway.AgentSpec{Session: spec, Worktree: in.Worktree, StepTurns: true})
	if err != nil {
		return nil, err
	}
	return &session{r: running}, nil
}

// resumable is the last earlier attempt if its runner died mid-attempt:
// its conversation is continued rather than started over.
func resumable(history []engine.Attempt) *engine.Attempt {
	if n := len(history); n > 0 && history[n-1].Status == engine.AttemptInterrupted {
		return &history[n-1]
	}
	return nil
}

// TaskPrompt is the task as the agent's model reads it: the goal, the
// selection, the criteria, earlier attempts' strategy notes, and the
// context pack.
func TaskPrompt(in agent.AttemptInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Task\n\n%s\n", strings.TrimSpace(in.Task.Goal))
	if s := in.Task.Selection; s != nil {
		fmt.Fprintf(&b, "\nThe user selected %s lines %d-%d:\n```\n%s\n```\n", s.File, s.StartLine, s.EndLine, s.Text)
	}
	if len(in.Task.Criteria) > 0 {
		b.WriteString("\n## Acceptance criteria\n")
		for _, c := range in.Task.Criteria {
			fmt.Fprintf(&b, "- %s\n", c)
		}
	}
	var notes []string
	for _, h := range in.History {
		if h.Note != "" {
			notes = append(notes, fmt.Sprintf("- attempt %d (%s): %s", h.Number, orDash(string(h.Verdict)), h.Note))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Earlier attempts\n" + strings.Join(notes, "\n") + "\n")
	}
	if in.Pack != nil {
		b.WriteString("\n## Context\n\n" + pack.Render(in.Pack))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "no verdict"
	}
	return s
}

type session struct {
	r     *gateway.Running
	ended bool
}

// Turn implements agent.Session: one agent turn (a model call and the
// tools it asked for), then the agent waits while the runner commits.
func (s *session) Turn(ctx context.Context) (agent.TurnResult, error) {
	if s.ended {
		return agent.TurnResult{}, gateway.ErrSessionEnded
	}
	rep, err := s.r.Session.NextTurn(ctx)
	if err == nil {
		return agent.TurnResult{Summary: rep.Summary, TokensUsed: rep.Tokens, Done: rep.Finish, Stuck: rep.Stuck, Note: rep.Note}, nil
	}
	if !errors.Is(err, gateway.ErrSessionEnded) {
		return agent.TurnResult{}, err
	}
	// The agent ended the session without another turn.
	s.ended = true
	out, werr := s.r.Wait()
	if werr != nil {
		return agent.TurnResult{}, werr
	}
	return EndResult(out)
}

// EndResult maps how the session ended onto the runner's turn result.
func EndResult(out gateway.Outcome) (agent.TurnResult, error) {
	switch out.Reason {
	case "done":
		return agent.TurnResult{Summary: "agent finished: " + out.Summary, Done: true}, nil
	case "stuck":
		return agent.TurnResult{Summary: "agent stuck", Stuck: true, Note: out.Note}, nil
	case "budget", "context":
		return agent.TurnResult{Summary: "agent stopped: " + out.Reason, Stuck: true,
			Note: "The previous attempt stopped (" + out.Reason + ": " + out.Summary + "). Aim for a smaller change and fewer, more targeted commands."}, nil
	}
	return agent.TurnResult{}, fmt.Errorf("bcode-agent ended the session (%s): %s", out.Reason, out.Summary)
}

// Close implements agent.Session: it stops the agent and waits for it.
func (s *session) Close() error {
	s.r.Stop()
	_, err := s.r.Wait()
	if err != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
