package pack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/engine"
)

// TaskHistory reads a task and what happened to it: the ledger's API.
type TaskHistory interface {
	Task(ctx context.Context, id string) (*engine.Task, error)
	Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error)
	Attempts(ctx context.Context, taskID string) ([]engine.Attempt, error)
}

// ruleFiles are the repository's instructions to agents, in the order shown.
var ruleFiles = []string{"AGENTS.md", ".bcode/rules.md", "CLAUDE.md"}

// rulesSection carries the repository's own rules for agents.
func (b *builder) rulesSection() candidate {
	c := candidate{
		title:  "Repository rules",
		reason: "instructions the repository gives to anyone changing it (" + strings.Join(ruleFiles, ", ") + ")",
		share:  shareRules,
	}
	for _, f := range ruleFiles {
		l, err := b.src.lines(f)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				b.notes = append(b.notes, fmt.Sprintf("%s not read: %s", f, shortErr(err)))
			}
			continue
		}
		text, _ := b.src.snippet(f, 1, len(l))
		short := text
		if len(l) > 30 {
			short, _ = b.src.snippet(f, 1, 30)
			short += fmt.Sprintf("\n… (%d more lines in %s)", len(l)-30, f)
		}
		c.items = append(c.items, item{
			label: f,
			full:  "From " + f + ":\n" + fence(f, text),
			short: "From " + f + " (start):\n" + fence(f, short),
			files: []string{f},
		})
	}
	return c
}

// historySection tells a resumed task's agent what was already tried: the
// attempts' verdicts and strategy notes (the rejected strategies) and the
// task's recent failure events, newest first.
func (b *builder) historySection(ctx context.Context) candidate {
	c := candidate{
		title:  "Task history",
		reason: "task " + b.in.TaskID + ": earlier attempts, their verdicts and strategy notes, and recent failures, newest first",
		share:  shareHistory,
	}
	if b.in.Tasks == nil {
		c.note = "task history unavailable: no ledger was given to read it from"
		return c
	}
	t, err := b.in.Tasks.Task(ctx, b.in.TaskID)
	if err != nil {
		c.note = "task " + b.in.TaskID + " not readable: " + shortErr(err)
		return c
	}
	head := fmt.Sprintf("Task %s (%s): %s", t.ID, t.Status, oneLineText(t.Goal))
	if t.Reason != "" {
		head += "\nReason: " + oneLineText(t.Reason)
	}
	if t.Verdict != "" {
		head += "\nLast verdict: " + t.Verdict
	}
	c.items = append(c.items, item{label: "task", full: head + "\n"})
	attempts, err := b.in.Tasks.Attempts(ctx, b.in.TaskID)
	if err != nil {
		c.note = "attempts not readable: " + shortErr(err)
	}
	slices.SortFunc(attempts, func(a, b engine.Attempt) int { return b.Number - a.Number })
	for _, a := range attempts {
		line := fmt.Sprintf("- attempt %d: %s", a.Number, a.Status)
		if a.Verdict != "" {
			line += ", verdict " + string(a.Verdict)
		}
		full := line
		if a.Note != "" {
			full += "\n  strategy note: " + a.Note
		}
		c.items = append(c.items, item{label: fmt.Sprintf("attempt %d", a.Number), full: full, short: line})
	}
	events, err := b.in.Tasks.Events(ctx, b.in.TaskID, 0, 0)
	if err != nil {
		c.note = "events not readable: " + shortErr(err)
	}
	var failures []engine.Event
	for _, e := range events {
		k := strings.ToLower(string(e.Kind))
		if strings.Contains(k, "fail") || strings.Contains(k, "reject") || strings.Contains(k, "verdict") || strings.Contains(k, "blocked") {
			failures = append(failures, e)
		}
	}
	slices.SortFunc(failures, func(a, b engine.Event) int { return int(b.Seq - a.Seq) })
	if len(failures) > 10 {
		failures = failures[:10]
	}
	for _, e := range failures {
		data := oneLineText(string(e.Data))
		if len(data) > 600 {
			data = data[:600] + "…"
		}
		line := fmt.Sprintf("- event %d %s (attempt %d)", e.Seq, e.Kind, e.Attempt)
		c.items = append(c.items, item{label: fmt.Sprintf("event %d", e.Seq), full: line + ": " + data, short: line})
	}
	return c
}
