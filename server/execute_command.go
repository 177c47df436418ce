package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify"
)

// The methods here implement command.Interface: each validates its typed
// arguments, delegates to the engine and, for long work, replies at once
// and reports through $/progress and bcode/taskChanged.

var _ command.Interface = (*Server)(nil)

// TaskCreate records a task (and with Run, starts it).
func (s *Server) TaskCreate(ctx context.Context, a command.TaskCreateArgs) (command.TaskResult, error) {
	root, err := s.workspace()
	if err != nil {
		return command.TaskResult{}, err
	}
	if strings.TrimSpace(a.Goal) == "" && strings.TrimSpace(a.Reproduce) == "" {
		return command.TaskResult{}, lsp.Errorf(lsp.CodeInvalidParams, "%s: the goal is empty: say what the task should achieve", command.TaskCreate)
	}
	req := app.TaskRequest{Repo: root, Goal: a.Goal, Criteria: a.Criteria, Reproduce: a.Reproduce}
	if a.MutantID != "" {
		if _, ok := s.mutant(a.MutantID); !ok {
			return command.TaskResult{}, lsp.Errorf(lsp.CodeInvalidParams, "no mutant %q in the last evidence report: run evidence again (bcode.evidence.run)", a.MutantID)
		}
	}
	if a.URI != "" {
		sel, err := s.selection(a.URI, a.Range)
		if err != nil {
			return command.TaskResult{}, err
		}
		req.Selection = sel
	} else if a.Range != nil {
		return command.TaskResult{}, lsp.Errorf(lsp.CodeInvalidParams, "%s: a range needs the uri of its document", command.TaskCreate)
	}
	t, err := s.app.CreateTask(ctx, req)
	if err != nil {
		return command.TaskResult{}, taskError(err)
	}
	s.notifyTask(ctx, t, engine.EventCreated)
	if a.Run {
		if err := s.app.CanRun(); err != nil {
			return command.TaskResult{ID: t.ID, Status: string(t.Status), Message: "created, not started: " + err.Error()}, nil
		}
		s.startTask(t.ID, false)
		return command.TaskResult{ID: t.ID, Status: string(engine.TaskRunning), Message: "created and started"}, nil
	}
	return command.TaskResult{ID: t.ID, Status: string(t.Status), Message: "created"}, nil
}

// selection reads the selected lines of a document into a task selection.
func (s *Server) selection(uri string, r *lsp.Range) (*engine.Selection, error) {
	abs, rel, err := s.fileOf(uri)
	if err != nil {
		return nil, err
	}
	text, err := s.text(abs)
	if err != nil {
		return nil, lsp.Errorf(lsp.CodeInvalidParams, "cannot read %s: %v", rel, err)
	}
	lines := strings.Count(text, "\n") + 1
	sel := &engine.Selection{File: rel, StartLine: 1, EndLine: lines}
	if r != nil {
		if before(r.End, r.Start) {
			return nil, lsp.Errorf(lsp.CodeInvalidParams, "the range ends before it starts")
		}
		if int(r.Start.Line) >= lines {
			return nil, lsp.Errorf(lsp.CodeInvalidParams, "the range starts at line %d but %s has %d lines", r.Start.Line+1, rel, lines)
		}
		sel.StartLine, sel.EndLine = int(r.Start.Line)+1, int(endLine(*r))
		if sel.EndLine > lines {
			sel.EndLine = lines
		}
	}
	from := lineStart(text, sel.StartLine-1)
	to := lineStart(text, sel.EndLine)
	if to < 0 {
		to = len(text)
	}
	sel.Text = text[from:to]
	sum := sha256.Sum256([]byte(sel.Text))
	sel.SHA256 = hex.EncodeToString(sum[:])
	return sel, nil
}

// TaskRun starts a task in the background and replies at once.
func (s *Server) TaskRun(ctx context.Context, a command.TaskIDArgs) (command.TaskResult, error) {
	t, err := s.task(ctx, a.ID)
	if err != nil {
		return command.TaskResult{}, err
	}
	if err := s.app.CanRun(); err != nil {
		return command.TaskResult{}, taskError(err)
	}
	s.startTask(t.ID, false)
	return command.TaskResult{ID: t.ID, Status: string(engine.TaskRunning), Message: "started"}, nil
}

// TaskResume continues a stopped task (ID "": the most recent one).
func (s *Server) TaskResume(ctx context.Context, a command.TaskIDArgs) (command.TaskResult, error) {
	id := a.ID
	if id == "" {
		id = s.resumable(ctx)
		if id == "" {
			return command.TaskResult{}, lsp.Errorf(lsp.CodeInvalidParams, "no task of this workspace is blocked, failed or cancelled, or queued after a start that failed, so there is nothing to resume")
		}
	}
	t, err := s.task(ctx, id)
	if err != nil {
		return command.TaskResult{}, err
	}
	if err := s.app.CanRun(); err != nil {
		return command.TaskResult{}, taskError(err)
	}
	s.startTask(t.ID, true)
	return command.TaskResult{ID: t.ID, Status: string(engine.TaskRunning), Message: "resumed"}, nil
}

// TaskCancel stops a running task.
func (s *Server) TaskCancel(ctx context.Context, a command.TaskIDArgs) (command.TaskResult, error) {
	return s.finishTask(ctx, a.ID, engine.EventCancelled, s.app.CancelTask)
}

// TaskAccept lands a verified task on the user's branch.
func (s *Server) TaskAccept(ctx context.Context, a command.TaskAcceptArgs) (command.TaskResult, error) {
	return s.finishTask(ctx, a.ID, engine.EventAccepted, func(ctx context.Context, id string) error {
		_, err := s.app.AcceptTask(ctx, id, a.Force, a.Digest)
		return err
	})
}

// TaskReject throws a task's work away (the record stays).
func (s *Server) TaskReject(ctx context.Context, a command.TaskIDArgs) (command.TaskResult, error) {
	return s.finishTask(ctx, a.ID, engine.EventRejected, func(ctx context.Context, id string) error {
		_, err := s.app.RejectTask(ctx, id)
		return err
	})
}

func (s *Server) finishTask(ctx context.Context, id string, kind engine.EventKind, op func(context.Context, string) error) (command.TaskResult, error) {
	if _, err := s.task(ctx, id); err != nil {
		return command.TaskResult{}, err
	}
	if err := op(ctx, id); err != nil {
		return command.TaskResult{}, taskError(err)
	}
	t, err := s.app.Task(ctx, id)
	if err != nil {
		return command.TaskResult{}, taskError(err)
	}
	s.notifyTask(ctx, t, kind)
	return command.TaskResult{ID: t.ID, Status: string(t.Status)}, nil
}

// task looks a task up, with errors a client can act on.
func (s *Server) task(ctx context.Context, id string) (*engine.Task, error) {
	if id == "" {
		return nil, lsp.Errorf(lsp.CodeInvalidParams, "no task ID given")
	}
	t, err := s.app.Task(ctx, id)
	if err != nil {
		return nil, taskError(err)
	}
	return t, nil
}

// taskError gives engine errors their LSP codes.
func taskError(err error) error {
	var le *lsp.Error
	switch {
	case errors.As(err, &le):
		return err
	case errors.Is(err, engine.ErrNotFound):
		return lsp.Errorf(lsp.CodeInvalidParams, "%v: list the workspace's tasks with bcode/tasks", err)
	case errors.Is(err, engine.ErrSelectionNotInBase), errors.Is(err, engine.ErrBadDigest), errors.Is(err, verify.ErrTestCommand):
		return lsp.Errorf(lsp.CodeInvalidParams, "%v", err)
	}
	return lsp.Errorf(lsp.CodeRequestFailed, "%v", err)
}

// setStartFailure records (or, with why "", clears) why a task the editor
// started never ran; bcode/tasks shows it while the task is still queued.
func (s *Server) setStartFailure(id, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why == "" {
		delete(s.startFailed, id)
		return
	}
	if s.startFailed == nil {
		s.startFailed = map[string]string{}
	}
	s.startFailed[id] = why
}

// startFailure is the recorded start failure of a queued task, or "".
func (s *Server) startFailure(t *engine.Task) string {
	if t.Status != engine.TaskQueued {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startFailed[t.ID]
}

func withReason(t *engine.Task, why string) *engine.Task {
	c := *t
	c.Reason = why
	return &c
}

// resumable is the most recent task of the workspace that can be resumed.
func (s *Server) resumable(ctx context.Context) string {
	root, err := s.workspace()
	if err != nil {
		return ""
	}
	ts, err := s.app.ListTasks(ctx, root)
	if err != nil {
		return ""
	}
	for _, t := range ts {
		switch {
		case t.Status == engine.TaskBlocked, t.Status == engine.TaskFailed, t.Status == engine.TaskCancelled:
			return t.ID
		case t.Status == engine.TaskQueued && (t.Reason != "" || s.startFailure(&t) != ""):
			return t.ID // its run could not start: Resume runs it again
		}
	}
	return ""
}

// mutant finds a mutant of the last report by ID.
func (s *Server) mutant(id string) (verify.Mutant, bool) {
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	for _, m := range s.ev.last.Mutants {
		if m.ID == id {
			return m, true
		}
	}
	return verify.Mutant{}, false
}

// MutantDiff shows a mutant as a diff of its file.
func (s *Server) MutantDiff(ctx context.Context, a command.MutantArgs) (command.DocumentResult, error) {
	if a.ID == "" {
		return command.DocumentResult{}, lsp.Errorf(lsp.CodeInvalidParams, "no mutant ID given")
	}
	m, ok := s.mutant(a.ID)
	if !ok {
		return command.DocumentResult{}, lsp.Errorf(lsp.CodeInvalidParams, "no mutant %q in the last evidence report: run evidence again (bcode.evidence.run)", a.ID)
	}
	s.ev.mu.Lock()
	src := s.ev.last.sources[m.File]
	s.ev.mu.Unlock()
	diff, err := m.Diff(src)
	if err != nil {
		return command.DocumentResult{}, lsp.Errorf(lsp.CodeRequestFailed, "%v", err)
	}
	uri := mutantScheme + ":/" + m.ID + ".diff"
	s.content.put(uri, diff)
	return s.show(ctx, uri, diff), nil
}

// show opens a virtual document in the client when it can.
func (s *Server) show(ctx context.Context, uri, text string) command.DocumentResult {
	s.mu.Lock()
	can := s.caps.showDocument
	s.mu.Unlock()
	res := command.DocumentResult{URI: uri, Text: text}
	if can {
		shown, err := s.client.ShowDocument(ctx, uri, true)
		if err != nil {
			s.log.Info("client did not show a document", "uri", uri, "err", err)
		}
		res.Shown = shown
	}
	return res
}
