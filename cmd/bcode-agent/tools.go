//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine/gateway/toolcall"
	"github.com/bcode-dev/bcode/engine/gateway/wire"
)

// toolbox holds the agent's tools and their schemas.
type toolbox struct {
	term    *terminal
	edit    *editor
	plan    *tracker
	schemas toolcall.Set
}

var toolSpecs = []wire.Tool{
	{Name: "terminal", Description: "Run a bash command in the worktree (a fresh shell each time; the working directory is the worktree, $WORKTREE names it). Output is stdout and stderr together, cut in the middle when long. There is no network.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"the bash command"},"timeout_seconds":{"type":"integer","minimum":1,"description":"kill the command after this many seconds (default 120, at most 1800)"}},"required":["command"],"additionalProperties":false}`)},
	{Name: "file_editor", Description: "View and edit files in the worktree. view: a file with line numbers (view_range [first, last], last -1 for the end) or a directory listing. create: a new file with file_text. str_replace: replace old_str, which must occur exactly once (copy it exactly, with enough lines to be unique), with new_str. insert: new_str after line insert_line (0: at the top). undo_edit: revert the last edit of path.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","enum":["view","create","str_replace","insert","undo_edit"]},"path":{"type":"string","description":"path relative to the worktree"},"file_text":{"type":"string"},"old_str":{"type":"string"},"new_str":{"type":"string"},"insert_line":{"type":"integer","minimum":0},"view_range":{"type":"array","items":{"type":"integer"}}},"required":["command","path"],"additionalProperties":false}`)},
	{Name: "task_tracker", Description: "Keep your plan. plan: set the items (title, status). update: set item id's status. view: show the plan. Statuses: todo, in_progress, done, blocked.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","enum":["plan","update","view"]},"items":{"type":"array","items":{"type":"object","properties":{"title":{"type":"string"},"status":{"type":"string","enum":["todo","in_progress","done","blocked"]}},"required":["title"],"additionalProperties":false}},"id":{"type":"integer","minimum":1},"status":{"type":"string","enum":["todo","in_progress","done","blocked"]}},"required":["command"],"additionalProperties":false}`)},
	{Name: "finish", Description: "Say the task is complete (the change is made and its tests pass), with a short summary of what you changed and why. bcode then verifies the change.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false}`)},
}

func newToolbox(dir string, termTimeout time.Duration, outputCap int) (*toolbox, error) {
	ed, err := newEditor(dir, outputCap)
	if err != nil {
		return nil, err
	}
	var tools []toolcall.Tool
	for _, s := range toolSpecs {
		sc, err := toolcall.CompileSchema(s.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", s.Name, err)
		}
		tools = append(tools, toolcall.Tool{Name: s.Name, Schema: sc})
	}
	return &toolbox{
		term:    &terminal{dir: dir, timeout: termTimeout, cap: outputCap},
		edit:    ed,
		plan:    &tracker{},
		schemas: toolcall.NewSet(tools),
	}, nil
}

func (t *toolbox) Close() error { return t.edit.root.Close() }

// exec runs one call. The gateway has already checked it, but the agent
// checks again before touching anything: a call is run whole or not at all.
func (t *toolbox) exec(ctx context.Context, c wire.ToolCall) (string, bool) {
	if c.Error != "" {
		return "error: the call was not run: " + c.Error, true
	}
	tc := toolcall.Call{Name: c.Name, Arguments: c.Arguments}
	if t.schemas.Check(&tc); tc.Error != "" {
		return "error: the call was not run: " + tc.Error, true
	}
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(c.Arguments))
		d.DisallowUnknownFields()
		return d.Decode(v)
	}
	switch c.Name {
	case "terminal":
		var a terminalArgs
		if err := dec(&a); err != nil {
			return "error: " + err.Error(), true
		}
		return t.term.run(ctx, a)
	case "file_editor":
		var a editorArgs
		if err := dec(&a); err != nil {
			return "error: " + err.Error(), true
		}
		return t.edit.run(a)
	case "task_tracker":
		var a trackerArgs
		if err := dec(&a); err != nil {
			return "error: " + err.Error(), true
		}
		return t.plan.run(a)
	case "finish":
		var a struct {
			Summary string `json:"summary"`
		}
		if err := dec(&a); err != nil {
			return "error: " + err.Error(), true
		}
		return "finished: " + a.Summary, false
	}
	return fmt.Sprintf("error: unknown tool %q", c.Name), true
}
