package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/sandbox/shown/showntest"
	"github.com/bcode-dev/bcode/server"
)

// editorStrings is every string of a JSON-RPC result as the editor
// decodes it, one per line.
func editorStrings(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	out, err := showntest.JSONStrings(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	return out
}

// TestShownEditor feeds the attack suite through bcode-ls to the fake
// editor: a task whose goal, changed lines and file names carry every
// attack, read back with bcode/tasks, bcode/task and bcode/taskDiff. The
// editor decodes no hidden rune from any of them.
func TestShownEditor(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	decoded := showntest.Options{Shown: func(s string) string { return shown.Text(string([]rune(s))) }, Lines: true}
	lines := showntest.Cases(showntest.Options{Shown: decoded.Shown, Lines: true, Unplantable: "\x00\n"})
	names := showntest.Cases(showntest.Options{Shown: decoded.Shown, Lines: true, Unplantable: "\x00/"})
	var goal strings.Builder
	for _, c := range names {
		goal.WriteString(c.Text + "\n")
	}
	tk := seedTask(t, ctx, led, e.Dir, goal.String(), engine.TaskVerified)
	commitOnBranch(t, e.Dir, tk.Branch, func() {
		var body strings.Builder
		for _, c := range lines {
			body.WriteString(c.Text + "\n")
		}
		write(t, e.Dir, "hostile.txt", []byte(body.String()))
		for _, c := range names {
			write(t, e.Dir, filepath.Join("names", c.Text), []byte("x\n"))
		}
	})
	if _, err := os.Stat(filepath.Join(e.Dir, "names")); err == nil {
		t.Fatalf("names/ left in the checkout")
	}
	call := func(t *testing.T, method string, params any) []byte {
		var raw json.RawMessage
		if err := e.Conn.Call(ctx, method, params, &raw); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return editorStrings(t, raw)
	}
	t.Run("bcode/tasks", func(t *testing.T) {
		showntest.Check(t, decoded, names, call(t, server.MethodTasks, map[string]any{}))
	})
	t.Run("bcode/task", func(t *testing.T) {
		showntest.Check(t, decoded, names, call(t, server.MethodTask, map[string]any{"id": tk.ID}))
	})
	t.Run("bcode/taskDiff names", func(t *testing.T) {
		showntest.Check(t, decoded, names, call(t, server.MethodTaskDiff, map[string]any{"id": tk.ID}))
	})
	t.Run("bcode/taskDiff lines", func(t *testing.T) {
		showntest.Check(t, decoded, lines, call(t, server.MethodTaskDiff, map[string]any{"id": tk.ID}))
	})
}
