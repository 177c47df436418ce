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

// TestAcceptStaleDigestRefused: the editor shows a task's diff with its
// digest and passes it back on accept. When the task's branch moved in
// between, the accept is refused (even forced) and main does not move;
// the digest of the diff shown now lands, and the journal records the
// approval of that digest. A digest that is not one is a bad argument.
func TestAcceptStaleDigestRefused(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	base := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main"))
	tk := seedTask(t, ctx, led, e.Dir, "add notes", engine.TaskVerified)
	head := commitOnBranch(t, e.Dir, tk.Branch, func() {
		if err := os.WriteFile(filepath.Join(e.Dir, "notes.txt"), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	for _, ev := range []struct {
		kind engine.EventKind
		data map[string]any
	}{
		{"turn.finished", map[string]any{"turn": 1, "commit": head, "parent": base, "changed": []string{"notes.txt"}}},
		{"task.verified", map[string]any{"head": head}},
	} {
		data, _ := json.Marshal(ev.data)
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: ev.kind, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	var shown command.TaskDiffResult
	if err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": tk.ID}, &shown); err != nil || !strings.HasPrefix(shown.Digest, "sha256:") || shown.Head != head {
		t.Fatalf("taskDiff: %v %+v", err, shown)
	}

	// The branch moves after the diff was shown.
	fake.Git(t, e.Dir, "checkout", "-q", tk.Branch)
	if err := os.WriteFile(filepath.Join(e.Dir, "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake.Git(t, e.Dir, "commit", "-q", "-am", "after the review")
	fake.Git(t, e.Dir, "checkout", "-q", "main")

	var res command.TaskResult
	err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: tk.ID, Force: true, Digest: shown.Digest}), &res)
	var le *lsp.Error
	if !errors.As(err, &le) || !strings.Contains(le.Message, "not the one you reviewed") || !strings.Contains(le.Message, shown.Digest) {
		t.Fatalf("accept with a stale digest: %v", err)
	}
	if got := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main")); got != base {
		t.Fatalf("a refused accept moved main to %s", got)
	}
	err = e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: tk.ID, Digest: "sha256:nope"}), &res)
	if !errors.As(err, &le) || le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, "not a change digest") {
		t.Fatalf("accept with a malformed digest: %v", err)
	}

	var now command.TaskDiffResult
	if err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": tk.ID}, &now); err != nil || now.Digest == shown.Digest {
		t.Fatalf("taskDiff after the move: %v %+v", err, now)
	}
	if err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: tk.ID, Force: true, Digest: now.Digest}), &res); err != nil || res.Status != "accepted" {
		t.Fatalf("accept with the digest shown: %+v %v", res, err)
	}
	if got := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main")); got != now.Head {
		t.Fatalf("main at %s, want the head shown %s", got, now.Head)
	}
	cs, err := led.Claims(ctx, 0, 0)
	if err != nil || len(cs) != 2 || cs[0].Kind != engine.ClaimApproval || !strings.Contains(string(cs[0].Payload), `"digest":"`+now.Digest+`"`) {
		t.Fatalf("journal: %v %+v", err, cs)
	}
}
