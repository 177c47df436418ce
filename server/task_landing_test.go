package server_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TestAcceptRefusesWhatLands: the editor's accept goes through the same
// landing judgement as the CLI: a verified task whose branch carries a
// link that path.Clean keeps inside the tree but the kernel resolves to
// /etc/passwd through an earlier link is refused without force, main
// unmoved, and lands with force.
func TestAcceptRefusesWhatLands(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	base := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main"))
	tk := seedTask(t, ctx, led, e.Dir, "link things", engine.TaskVerified)
	head := commitOnBranch(t, e.Dir, tk.Branch, func() {
		if err := os.MkdirAll(filepath.Join(e.Dir, "a", "b", "c", "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{"a/b/c/d/z": "../../../..", "p": "a/b/c/d/z/../../../../../etc/passwd"} {
			if err := os.Symlink(target, filepath.Join(e.Dir, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, ev := range []struct {
		kind engine.EventKind
		data map[string]any
	}{
		{"attempt.started", map[string]any{"number": 1}},
		{"turn.finished", map[string]any{"turn": 1, "commit": head, "parent": base, "changed": []string{"a/b/c/d/z", "p"}}},
		{"check.finished", map[string]any{"head": head, "verdict": "verified"}},
		{"task.verified", map[string]any{"head": head}},
	} {
		data, _ := json.Marshal(ev.data)
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: ev.kind, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	var res command.TaskResult
	err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: tk.ID}), &res)
	var le *lsp.Error
	if !errors.As(err, &le) || !strings.Contains(le.Message, "symlink_outside p") {
		t.Fatalf("accept of a link out of the tree: %v", err)
	}
	if got := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main")); got != base {
		t.Fatalf("a refused accept moved main to %s", got)
	}
	if err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: tk.ID, Force: true}), &res); err != nil || res.Status != "accepted" {
		t.Fatalf("forced accept: %+v %v", res, err)
	}
}
