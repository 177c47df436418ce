package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/lsp"
)

// Who runs a task the editor starts: this server, in its own process
// (engine/app's RunTask, the runner loop `bcode task run` uses), for as
// long as the server lives, so the action works on a machine where the
// user started nothing but the editor. The task's lease decides between
// it and any `bcode runner` the user has: whichever claims the task first
// runs it, the other stands aside, and the ledger's events reach the
// editor either way (the run's own as they happen, another runner's
// through the ledger watcher). When the server exits mid-run, the runner
// stops the way SIGTERM stops `bcode task run` (the task is left blocked,
// interrupted, and resumes from its last checkpoint).

// startTask runs (or resumes) a task in the background, reporting through
// $/progress and bcode/taskChanged (each ledger event as it is recorded).
func (s *Server) startTask(id string, resume bool) {
	s.goBackground("task "+id, func(bg context.Context) {
		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		p := s.beginProgress(ctx, "bcode task "+id, func() {
			// Cancelling the progress cancels the task the way `bcode
			// task cancel` does, so the ledger records it.
			_ = s.app.CancelTask(context.Background(), id)
			cancel()
		})
		msg := "finished"
		defer func() { p.end(msg) }()
		s.setStartFailure(id, "")
		t, err := s.app.Task(ctx, id)
		if err == nil {
			s.notifyTask(ctx, t, engine.EventStarted)
			// A queued task has nothing to resume: it runs.
			resume = resume && t.Status != engine.TaskQueued
		}
		o := app.RunOptions{Progress: p, OnEvent: func(ev engine.Event) { s.taskEvent(bg, ev) }}
		if resume {
			_, err = s.app.ResumeTask(ctx, id, engine.Budgets{}, o)
		} else {
			_, err = s.app.RunTask(ctx, id, o)
		}
		msg = s.runEnded(ctx, id, err)
	})
}

// taskEvent tells the client about one event of a run this server holds,
// as soon as it is on disk.
func (s *Server) taskEvent(ctx context.Context, ev engine.Event) {
	s.tasks.fold(ev)
	if t, err := s.app.Task(ctx, ev.TaskID); err == nil {
		s.sendTaskChanged(ctx, t, ev)
	}
}

// runEnded tells the user how a run the server started ended and returns
// its progress's last message.
func (s *Server) runEnded(ctx context.Context, id string, err error) string {
	t, gerr := s.app.Task(context.Background(), id)
	switch {
	case errors.Is(err, engine.ErrLeaseHeld):
		// Another runner (a `bcode runner`, another editor) claimed it
		// first: it runs there, and its events come through the ledger.
		msg := "running in another bcode process: " + err.Error()
		_ = s.client.ShowMessage(context.Background(), lsp.MessageInfo, fmt.Sprintf("bcode: task %s is %s", id, msg))
		return msg
	case err != nil && ctx.Err() == nil && (gerr != nil || t.Status == engine.TaskQueued || !startedSince(s, id)):
		// The runner never got going (no model, no agent, no Docker):
		// engine/app recorded task.start_failed with the fix; the user
		// hears it now, not by watching a queued row.
		why := "could not start: " + err.Error()
		s.log.Warn("task did not start", "task", id, "err", err)
		s.setStartFailure(id, why)
		_ = s.client.ShowMessage(context.Background(), lsp.MessageError, fmt.Sprintf("bcode: task %s %s (then run it again: Resume task)", id, why))
		if gerr == nil {
			s.notifyTask(context.Background(), withReason(t, why), app.EventStartFailed)
		}
		return why
	case err != nil:
		s.log.Warn("task stopped", "task", id, "err", err)
	}
	if gerr != nil {
		if err != nil {
			return "stopped: " + err.Error()
		}
		return "finished"
	}
	msg := strings.TrimSpace(fmt.Sprintf("%s %s", t.Status, t.Verdict))
	if err != nil {
		msg += ": " + err.Error()
	}
	s.notifyTask(context.Background(), t, app.EventStopped)
	return msg
}

// startedSince reports whether the task's newest event is not a start
// failure: a resumed task keeps its old status when its run cannot start.
func startedSince(s *Server, id string) bool {
	evs, _, err := s.app.LatestEvents(context.Background(), id, 0, 1)
	return err != nil || len(evs) == 0 || evs[0].Kind != engine.EventStartFailed
}

// endsRun reports whether an event kind ends a run: the editor tells the
// user, with the diff, accept and reject at hand.
func endsRun(k engine.EventKind) bool {
	return k == engine.EventVerified || k == engine.EventBlocked || k == engine.EventFailed || k == engine.EventNotReproducible
}

// eventSummary says what an event was, from the ledger's own fields (the
// numbers, verdicts and what is missing); text the model wrote (a turn's
// summary) is left out.
func eventSummary(e engine.Event) string {
	var d struct {
		Number  int    `json:"number"`
		Turn    int    `json:"turn"`
		Verdict string `json:"verdict"`
		Changed any    `json:"changed"`
		Tokens  int    `json:"tokens"`
		Missing string `json:"missing"`
		Fix     string `json:"fix"`
		Head    string `json:"head"`
		Level   string `json:"level"`
		Code    string `json:"code"`
		Failing []any  `json:"failing"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Kind {
	case engine.EventCreated:
		return "created"
	case engine.EventStarted:
		return "started"
	case engine.EventAttemptStarted:
		return numbered("attempt", d.Number) + " started"
	case engine.EventContextBuilt:
		return fmt.Sprintf("context pack built (%d tokens)", d.Tokens)
	case engine.EventTurn:
		if d.Changed == true {
			return numbered("turn", d.Turn) + " finished, files changed"
		}
		return numbered("turn", d.Turn) + " finished"
	case engine.EventCheckStarted:
		return "checking " + short(d.Head)
	case engine.EventCheckFinished:
		if d.Level != "" {
			return fmt.Sprintf("check: %s (level %s)", d.Verdict, d.Level)
		}
		return "check: " + d.Verdict
	case engine.EventReproduced:
		return fmt.Sprintf("reproduced on the base: %d failing test(s) pinned as the oracle", len(d.Failing))
	case engine.EventNotReproducible:
		return "not reproducible: " + strings.ReplaceAll(d.Code, "_", " ")
	case engine.EventNoChange:
		return numbered("attempt", d.Number) + " changed nothing"
	case engine.EventAttemptFinished:
		return numbered("attempt", d.Number) + " finished: " + d.Verdict
	case engine.EventStartFailed:
		if d.Fix != "" {
			return fmt.Sprintf("could not start: no %s (fix: %s)", d.Missing, d.Fix)
		}
		return "could not start"
	}
	return string(e.Kind)
}

// numbered is "attempt 2", or "attempt" for an event written without its
// number (an older bcode, another tool appending to the ledger).
func numbered(what string, n int) string {
	if n <= 0 {
		return what
	}
	return fmt.Sprintf("%s %d", what, n)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// taskTracker follows where each task's work is (its attempt and turn)
// from the events the server sees, and which event it last told the client
// about, so the run's own events and the ledger watcher's do not repeat.
type taskTracker struct {
	mu   sync.Mutex
	work map[string]*taskWork
	sent map[string]int64
}

type taskWork struct{ attempt, turn int }

// fresh reports whether event seq of task id is newer than the last one
// sent, and marks it sent. Events without a sequence (the server's own
// notes) are always fresh.
func (k *taskTracker) fresh(id string, seq int64) bool {
	if seq == 0 {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sent == nil {
		k.sent = map[string]int64{}
	}
	if seq <= k.sent[id] {
		return false
	}
	k.sent[id] = seq
	return true
}

// fold updates the task's work from one event. An event of a task not
// known yet is left for workOf to read from the ledger, unless it starts
// an attempt (which says all there is).
func (k *taskTracker) fold(e engine.Event) {
	var d struct {
		Number int `json:"number"`
		Turn   int `json:"turn"`
	}
	if e.Kind != engine.EventAttemptStarted && e.Kind != engine.EventTurn {
		return
	}
	_ = json.Unmarshal(e.Data, &d)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.work == nil {
		k.work = map[string]*taskWork{}
	}
	w := k.work[e.TaskID]
	switch {
	case e.Kind == engine.EventAttemptStarted:
		k.work[e.TaskID] = &taskWork{attempt: d.Number}
	case w != nil:
		w.turn = max(w.turn, d.Turn)
	}
}

func (k *taskTracker) set(id string, w taskWork) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.work == nil {
		k.work = map[string]*taskWork{}
	}
	if _, ok := k.work[id]; !ok {
		k.work[id] = &w
	}
}

func (k *taskTracker) get(id string) (taskWork, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w, ok := k.work[id]
	if !ok {
		return taskWork{}, false
	}
	return *w, true
}

// workOf is task id's newest attempt and that attempt's last turn: from
// the events seen, else read once from the ledger.
func (s *Server) workOf(ctx context.Context, id string) (attempt, turn int) {
	if w, ok := s.tasks.get(id); ok {
		return w.attempt, w.turn
	}
	evs, _, err := s.app.LatestEvents(ctx, id, 0, 200)
	if err != nil {
		return 0, 0
	}
	for _, e := range evs {
		s.tasks.fold(e)
	}
	w, ok := s.tasks.get(id)
	if !ok {
		atts, err := s.app.Attempts(ctx, id)
		if err != nil || len(atts) == 0 {
			return 0, 0
		}
		// The attempt started before the newest events: its turn is
		// the newest one among them.
		w = taskWork{attempt: atts[len(atts)-1].Number}
		for _, e := range evs {
			var d struct {
				Turn int `json:"turn"`
			}
			if e.Kind == engine.EventTurn && json.Unmarshal(e.Data, &d) == nil {
				w.turn = max(w.turn, d.Turn)
			}
		}
		s.tasks.set(id, w)
	}
	return w.attempt, w.turn
}
