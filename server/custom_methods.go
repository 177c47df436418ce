package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// bcode's own methods (documented with JSON examples in docs/lsp.md).
const (
	MethodTasks           = "bcode/tasks"
	MethodTask            = "bcode/task"
	MethodContextPack     = "bcode/contextPack"
	MethodEvidence        = "bcode/evidence"
	MethodDocumentContent = "bcode/documentContent" // for clients without workspace/textDocumentContent
	MethodTaskChanged     = "bcode/taskChanged"     // notification, server to client
	MethodTaskDiff        = command.MethodTaskDiff
)

// TaskSummary is one line of bcode/tasks.
type TaskSummary struct {
	ID        string        `json:"id"`
	Goal      string        `json:"goal"`
	Status    string        `json:"status"`
	Verdict   string        `json:"verdict,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Branch    string        `json:"branch"`
	UpdatedAt time.Time     `json:"updatedAt"`
	LastEvent *EventSummary `json:"lastEvent,omitempty"`
	// Attempt and Turn are where the task's work is: its newest attempt's
	// number and that attempt's last finished turn (0: none yet).
	Attempt int `json:"attempt,omitempty"`
	Turn    int `json:"turn,omitempty"`
}

// EventSummary is a task event without its data.
type EventSummary struct {
	Seq  int64            `json:"seq"`
	Kind engine.EventKind `json:"kind"`
	At   time.Time        `json:"at"`
}

// TasksResult answers bcode/tasks.
type TasksResult struct {
	Tasks []TaskSummary `json:"tasks"`
}

// TaskDetail answers bcode/task.
type TaskDetail struct {
	Task     engine.Task      `json:"task"`
	Attempts []engine.Attempt `json:"attempts"`
	// Events are the task's newest events (at most eventsLimit, default
	// DefaultEventsLimit), oldest first.
	Events []engine.Event `json:"events"`
	// EventsOmitted counts the older events (after eventsAfter) left out.
	EventsOmitted int `json:"eventsOmitted"`
	// Verification is the task's last gate run, with the full report
	// (its level, level_required and level_missing among it).
	Verification *engine.VerificationRun `json:"verification,omitempty"`
	// Oracle is the task's reproduction (--reproduce): the command and,
	// once pinned, the failing tests and their files' hashes.
	Oracle *engine.Oracle `json:"oracle,omitempty"`
}

// PackSummary answers bcode/contextPack.
type PackSummary struct {
	Goal     string           `json:"goal,omitempty"`
	Budget   int              `json:"budget"`
	Total    int              `json:"total"`
	Counter  string           `json:"counter"`
	Sections []SectionSummary `json:"sections"`
	Files    []string         `json:"files"`
	Cut      []string         `json:"cut,omitempty"`
	Notes    []string         `json:"notes,omitempty"`
}

// SectionSummary is one section of a pack, without its text.
type SectionSummary struct {
	Title  string   `json:"title"`
	Reason string   `json:"reason"`
	Tokens int      `json:"tokens"`
	Files  []string `json:"files"`
}

// TaskChanged is the bcode/taskChanged notification: the task's state
// after the ledger event that changed it.
type TaskChanged struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Kind and At are the event's kind and time (RFC 3339), so a client
	// shows when the task last changed without asking again.
	Kind engine.EventKind `json:"kind"`
	At   time.Time        `json:"at"`
	Seq  int64            `json:"seq,omitempty"`
	// Event repeats Kind for clients written against the first version.
	Event engine.EventKind `json:"event"`
	// Attempt and Turn are the task's newest attempt and that attempt's
	// last finished turn, as of this event (0: none yet).
	Attempt int `json:"attempt,omitempty"`
	Turn    int `json:"turn,omitempty"`
	// Summary says in words what the event was ("turn 2 finished",
	// "check: verified", "could not start: no model (fix: ...)"), from the
	// ledger's own fields, never from the model's text.
	Summary string `json:"summary,omitempty"`
	// Ended is set on the event that ends a run (task.verified,
	// task.blocked, task.failed): the client tells the user, with the
	// task's diff, accept and reject at hand.
	Ended bool `json:"ended,omitempty"`
}

// Bounds of bcode/task's eventsLimit.
const (
	DefaultEventsLimit = 200
	MaxEventsLimit     = 10000
)

type taskParams struct {
	ID string `json:"id"`
	// EventsLimit asks for the newest N events (0: DefaultEventsLimit).
	EventsLimit int `json:"eventsLimit,omitempty"`
	// EventsAfter leaves out the events up to this sequence number, so a
	// client that has them asks only for what is new.
	EventsAfter int64 `json:"eventsAfter,omitempty"`
}

type evidenceParams struct {
	// Wait makes the request return after the pending or running run ends.
	Wait bool `json:"wait,omitempty"`
}

type contentParams struct {
	URI string `json:"uri"`
}

type contentResult struct {
	Text string `json:"text"`
}

// Custom serves bcode/* requests. Every one validates its params before
// it does anything: a bad value is an InvalidParams error naming the field.
func (s *Server) Custom(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var serve func(context.Context, string, json.RawMessage) (any, error)
	switch method {
	case MethodTasks:
		serve = s.customTasks
	case MethodTask:
		serve = s.customTask
	case MethodTaskDiff:
		serve = s.customTaskDiff
	case MethodContextPack:
		serve = s.customContextPack
	case MethodEvidence:
		serve = s.customEvidence
	case MethodDocumentContent:
		serve = s.customDocumentContent
	case MethodHealth:
		serve = s.customHealth
	default:
		return nil, lsp.Errorf(lsp.CodeMethodNotFound, "bcode-ls has no method %q (it serves %s, %s, %s, %s, %s, %s and %s)", method, MethodTasks, MethodTask, MethodTaskDiff, MethodContextPack, MethodEvidence, MethodDocumentContent, MethodHealth)
	}
	return serve(ctx, method, params)
}

// customTasks is bcode/tasks: the workspace's tasks.
func (s *Server) customTasks(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct{}
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	return s.listTasks(ctx)
}

// customTask is bcode/task: one task with its attempts and latest events.
func (s *Server) customTask(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p taskParams
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.ID == "":
		return nil, command.Required(method, "id", "the task's ID, as bcode/tasks lists it")
	case p.EventsLimit < 0 || p.EventsLimit > MaxEventsLimit:
		return nil, command.FieldError(method, "eventsLimit", "eventsLimit must be between 0 (the default, %d) and %d, got %d", DefaultEventsLimit, MaxEventsLimit, p.EventsLimit)
	case p.EventsAfter < 0:
		return nil, command.FieldError(method, "eventsAfter", "eventsAfter must be a sequence number (0 or more), got %d", p.EventsAfter)
	}
	return s.taskDetail(ctx, p)
}

// customTaskDiff is bcode/taskDiff: what bcode.task.diff answers.
func (s *Server) customTaskDiff(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p command.TaskDiffArgs
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	return s.taskDiff(ctx, method, p)
}

// customContextPack is bcode/contextPack: the pack's summary, section by
// section.
func (s *Server) customContextPack(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p command.PackArgs
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	if err := checkPackArgs(method, p); err != nil {
		return nil, err
	}
	pk, err := s.buildPack(ctx, p)
	if err != nil {
		return nil, err
	}
	out := PackSummary{Goal: pk.Goal, Budget: pk.Budget, Total: pk.Total, Counter: pk.Counter, Files: pk.Files(), Cut: pk.Cut, Notes: pk.Notes, Sections: []SectionSummary{}}
	if out.Files == nil {
		out.Files = []string{}
	}
	for _, sec := range pk.Sections {
		out.Sections = append(out.Sections, SectionSummary{Title: sec.Title, Reason: sec.Reason, Tokens: sec.Tokens, Files: sec.Files})
	}
	return out, nil
}

// customEvidence is bcode/evidence: the last report, after the running
// run when asked to wait.
func (s *Server) customEvidence(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p evidenceParams
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	if _, err := s.workspace(); err != nil {
		return nil, err
	}
	return s.lastEvidence(ctx, p.Wait)
}

// customDocumentContent is bcode/documentContent: a bcode-pack: or
// bcode-mutant: document's text, for clients without
// workspace/textDocumentContent.
func (s *Server) customDocumentContent(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p contentParams
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, command.Required(method, "uri", "a bcode-pack: or bcode-mutant: URI a command returned")
	}
	text, err := s.TextDocumentContent(ctx, p.URI)
	if err != nil {
		return nil, err
	}
	return contentResult{Text: text}, nil
}

// checkPackArgs refuses pack arguments that cannot name a place, before a
// pack is built.
func checkPackArgs(method string, p command.PackArgs) error {
	switch {
	case p.Range != nil && p.URI == "":
		return command.FieldError(method, "range", "a range needs the uri of its document")
	case p.Budget < 0:
		return command.FieldError(method, "budget", "budget must be a number of tokens (0: the default), got %d", p.Budget)
	}
	return nil
}

func decodeParams(method string, raw json.RawMessage, v any) error {
	return command.Decode(method, raw, v)
}

func (s *Server) listTasks(ctx context.Context) (TasksResult, error) {
	root, err := s.workspace()
	if err != nil {
		return TasksResult{}, err
	}
	rows, err := s.app.TaskRows(ctx, root)
	if err != nil {
		return TasksResult{}, taskError(err)
	}
	out := TasksResult{Tasks: make([]TaskSummary, 0, len(rows))}
	for _, r := range rows {
		t := r.Task
		sum := TaskSummary{ID: t.ID, Goal: t.Goal, Status: string(t.Status), Verdict: t.Verdict, Reason: t.Reason, Branch: t.Branch, UpdatedAt: t.UpdatedAt}
		if why := s.startFailure(&t); why != "" {
			sum.Reason = why
		}
		if e := r.LastEvent; e != nil {
			sum.LastEvent = &EventSummary{Seq: e.Seq, Kind: e.Kind, At: e.At}
		}
		sum.Attempt, sum.Turn = s.workOf(ctx, t.ID)
		out.Tasks = append(out.Tasks, sum)
	}
	return out, nil
}

func (s *Server) taskDetail(ctx context.Context, p taskParams) (TaskDetail, error) {
	if p.ID == "" {
		return TaskDetail{}, lsp.Errorf(lsp.CodeInvalidParams, "no task ID given")
	}
	limit := p.EventsLimit
	if limit <= 0 {
		limit = DefaultEventsLimit
	}
	d, err := s.app.TaskDetail(ctx, p.ID, p.EventsAfter, limit)
	if err != nil {
		return TaskDetail{}, taskError(err)
	}
	return TaskDetail{Task: d.Task, Attempts: d.Attempts, Events: d.Events, EventsOmitted: d.Omitted, Verification: d.Verification, Oracle: d.Oracle}, nil
}

// notifyTask sends bcode/taskChanged for a change the server itself made
// (or started): the task's state with its newest ledger event, or, when
// the ledger has none to show for it, kind at the current time.
func (s *Server) notifyTask(ctx context.Context, t *engine.Task, kind engine.EventKind) {
	ev := engine.Event{Kind: kind, At: time.Now().UTC()}
	if evs, _, err := s.app.LatestEvents(ctx, t.ID, 0, 1); err == nil && len(evs) == 1 {
		ev = evs[0]
	}
	s.sendTaskChanged(ctx, t, ev)
}

func (s *Server) sendTaskChanged(ctx context.Context, t *engine.Task, e engine.Event) {
	if !s.tasks.fresh(t.ID, e.Seq) {
		return // sent already (the run's own event, then the ledger watcher)
	}
	c := TaskChanged{ID: t.ID, Status: string(t.Status), Verdict: t.Verdict, Reason: t.Reason, Kind: e.Kind, At: e.At.UTC(), Seq: e.Seq, Event: e.Kind,
		Summary: eventSummary(e), Ended: endsRun(e.Kind)}
	if why := s.startFailure(t); why != "" && c.Reason == "" {
		c.Reason = why
	}
	c.Attempt, c.Turn = s.workOf(ctx, t.ID)
	if err := s.client.Notify(ctx, MethodTaskChanged, c); err != nil {
		s.log.Warn("sending bcode/taskChanged", "err", err)
	}
}

// watchTaskEvents tells the client about task changes made anywhere (the
// CLI, another editor, a runner in the background) by following the
// ledger's event sequence.
func (s *Server) watchTaskEvents(ctx context.Context, every time.Duration) {
	root, err := s.workspace()
	if err != nil {
		return
	}
	var last int64 = -1
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if last < 0 {
			// Start from the end: history is what bcode/tasks is for.
			if seq, err := s.app.LastSeq(ctx, root); err == nil {
				last = seq
			}
		} else if evs, err := s.app.Events(ctx, "", last, 500); err == nil && len(evs) > 0 {
			latest := map[string]engine.Event{}
			for _, e := range evs {
				latest[e.TaskID] = e
				last = max(last, e.Seq)
				s.tasks.fold(e)
				if e.Kind == app.EventModuleApprovalNeeded {
					if t, err := s.app.Task(ctx, e.TaskID); err == nil && t.Repo == root {
						s.askModuleApproval(t, e)
					}
				}
			}
			for id, e := range latest {
				t, err := s.app.Task(ctx, id)
				if err != nil || t.Repo != root {
					continue
				}
				s.sendTaskChanged(ctx, t, e)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
