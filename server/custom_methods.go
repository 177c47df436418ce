package server

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/bcode-dev/bcode/engine"
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
}

// EventSummary is a task event without its data.
type EventSummary struct {
	Seq  int64     `json:"seq"`
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
}

// TasksResult answers bcode/tasks.
type TasksResult struct {
	Tasks []TaskSummary `json:"tasks"`
}

// TaskDetail answers bcode/task.
type TaskDetail struct {
	Task     engine.Task      `json:"task"`
	Attempts []engine.Attempt `json:"attempts"`
	Events   []engine.Event   `json:"events"`
	// Verification is the task's last gate run, with the full report.
	Verification *engine.VerificationRun `json:"verification,omitempty"`
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

// TaskChanged is the bcode/taskChanged notification.
type TaskChanged struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Event   string `json:"event"` // the event kind that changed it
	Seq     int64  `json:"seq,omitempty"`
}

type taskParams struct {
	ID          string `json:"id"`
	EventsLimit int    `json:"eventsLimit,omitempty"`
	EventsAfter int64  `json:"eventsAfter,omitempty"`
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

// Custom serves bcode/* requests.
func (s *Server) Custom(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodTasks:
		var p struct{}
		if err := decodeParams(method, params, &p); err != nil {
			return nil, err
		}
		return s.listTasks(ctx)
	case MethodTask:
		var p taskParams
		if err := decodeParams(method, params, &p); err != nil {
			return nil, err
		}
		return s.taskDetail(ctx, p)
	case MethodContextPack:
		var p command.PackArgs
		if err := decodeParams(method, params, &p); err != nil {
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
	case MethodEvidence:
		var p evidenceParams
		if err := decodeParams(method, params, &p); err != nil {
			return nil, err
		}
		if _, err := s.workspace(); err != nil {
			return nil, err
		}
		return s.lastEvidence(ctx, p.Wait)
	case MethodDocumentContent:
		var p contentParams
		if err := decodeParams(method, params, &p); err != nil {
			return nil, err
		}
		text, err := s.TextDocumentContent(ctx, p.URI)
		if err != nil {
			return nil, err
		}
		return contentResult{Text: text}, nil
	}
	return nil, lsp.Errorf(lsp.CodeMethodNotFound, "bcode-ls has no method %q (it serves %s, %s, %s, %s and %s)", method, MethodTasks, MethodTask, MethodContextPack, MethodEvidence, MethodDocumentContent)
}

func decodeParams(method string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return lsp.Errorf(lsp.CodeInvalidParams, "%s: malformed params: %v", method, err)
	}
	return nil
}

func (s *Server) listTasks(ctx context.Context) (TasksResult, error) {
	root, err := s.workspace()
	if err != nil {
		return TasksResult{}, err
	}
	ts, err := s.tasks.List(ctx, root)
	if err != nil {
		return TasksResult{}, taskError(err)
	}
	out := TasksResult{Tasks: make([]TaskSummary, 0, len(ts))}
	for _, t := range ts {
		sum := TaskSummary{ID: t.ID, Goal: t.Goal, Status: string(t.Status), Verdict: t.Verdict, Reason: t.Reason, Branch: t.Branch, UpdatedAt: t.UpdatedAt}
		if evs, err := s.tasks.Events(ctx, t.ID, 0, 0); err == nil && len(evs) > 0 {
			e := evs[len(evs)-1]
			sum.LastEvent = &EventSummary{Seq: e.Seq, Kind: e.Kind, At: e.At}
		}
		out.Tasks = append(out.Tasks, sum)
	}
	return out, nil
}

func (s *Server) taskDetail(ctx context.Context, p taskParams) (TaskDetail, error) {
	t, err := s.task(ctx, p.ID)
	if err != nil {
		return TaskDetail{}, err
	}
	d := TaskDetail{Task: *t, Attempts: []engine.Attempt{}, Events: []engine.Event{}}
	if as, err := s.tasks.Attempts(ctx, t.ID); err == nil && as != nil {
		d.Attempts = as
	}
	limit := p.EventsLimit
	if limit <= 0 {
		limit = 200
	}
	if evs, err := s.tasks.Events(ctx, t.ID, p.EventsAfter, limit); err == nil && evs != nil {
		d.Events = evs
	}
	if vs, err := s.tasks.Verifications(ctx, t.Repo, 0); err == nil {
		for i := range vs {
			if vs[i].TaskID == t.ID {
				d.Verification = &vs[i]
				break
			}
		}
	}
	return d, nil
}

// notifyTask sends bcode/taskChanged.
func (s *Server) notifyTask(ctx context.Context, t *engine.Task, kind string) {
	if err := s.client.Notify(ctx, MethodTaskChanged, TaskChanged{ID: t.ID, Status: string(t.Status), Verdict: t.Verdict, Reason: t.Reason, Event: kind}); err != nil {
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
			if ts, err := s.tasks.List(ctx, root); err == nil {
				last = 0
				for _, t := range ts {
					if evs, err := s.tasks.Events(ctx, t.ID, 0, 0); err == nil && len(evs) > 0 {
						last = max(last, evs[len(evs)-1].Seq)
					}
				}
			}
		} else if evs, err := s.tasks.Events(ctx, "", last, 500); err == nil && len(evs) > 0 {
			latest := map[string]engine.Event{}
			for _, e := range evs {
				latest[e.TaskID] = e
				last = max(last, e.Seq)
			}
			for id, e := range latest {
				t, err := s.tasks.Get(ctx, id)
				if err != nil || t.Repo != root {
					continue
				}
				_ = s.client.Notify(ctx, MethodTaskChanged, TaskChanged{ID: t.ID, Status: string(t.Status), Verdict: t.Verdict, Reason: t.Reason, Event: e.Kind, Seq: e.Seq})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
