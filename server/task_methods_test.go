package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/server/lsp"
)

// openLedger opens the ledger the server under test reads (BCODE_STATE is
// the test's own state dir, set by setup).
func openLedger(t *testing.T, ctx context.Context) *ledger.Ledger {
	t.Helper()
	path, err := ledger.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	return led
}

func seedTask(t *testing.T, ctx context.Context, led ledger.Store, repo, goal string, status engine.TaskStatus) *engine.Task {
	t.Helper()
	base := strings.TrimSpace(fake.Git(t, repo, "rev-parse", "HEAD"))
	tk := &engine.Task{Repo: repo, Goal: goal, Base: base, Status: status}
	if err := led.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func write(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitOnBranch makes one commit on a new branch from HEAD with the
// changes do makes, and returns to main; it returns the commit.
func commitOnBranch(t *testing.T, repo, branch string, do func()) string {
	t.Helper()
	fake.Git(t, repo, "checkout", "-q", "-b", branch)
	do()
	fake.Git(t, repo, "add", "-A")
	fake.Git(t, repo, "commit", "-q", "-m", "task work on "+branch)
	head := strings.TrimSpace(fake.Git(t, repo, "rev-parse", "HEAD"))
	fake.Git(t, repo, "checkout", "-q", "main")
	return head
}

// TestTaskDiff: bcode/taskDiff (and bcode.task.diff) read a task's change
// from its branch: both sides of each text file, binary and large files
// named with their sizes but not sent, one file by path, git's unified diff
// text; a task without a branch says so; bad params name the field.
func TestTaskDiff(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	write(t, e.Dir, "assets/logo.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR old"))
	write(t, e.Dir, "data/old.txt", []byte("gone soon\n"))
	fake.Git(t, e.Dir, "add", "-A")
	fake.Git(t, e.Dir, "commit", "-q", "-m", "assets")
	tk := seedTask(t, ctx, led, e.Dir, "tighten the discount", engine.TaskVerified)
	big := strings.Repeat("a line of a generated file that is far too long to send\n", 6000) // ~330 KiB
	basePrice, _ := os.ReadFile(filepath.Join(e.Dir, "price", "price.go"))
	head := commitOnBranch(t, e.Dir, tk.Branch, func() {
		write(t, e.Dir, "price/price.go", []byte(strings.Replace(string(basePrice), "n >= 10", "n > 10", 1)))
		write(t, e.Dir, "price/boundary_test.go", []byte("package price\n"))
		write(t, e.Dir, "assets/logo.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR new!"))
		write(t, e.Dir, "gen/big.txt", []byte(big))
		if err := os.Remove(filepath.Join(e.Dir, "data", "old.txt")); err != nil {
			t.Fatal(err)
		}
	})

	var d command.TaskDiffResult
	if err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": tk.ID}, &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != tk.ID || d.Head != head || d.Base != tk.Base || d.Branch != tk.Branch {
		t.Errorf("identity: %+v", d)
	}
	byPath := map[string]command.FileDiff{}
	var order []string
	for _, f := range d.Files {
		byPath[f.Path] = f
		order = append(order, f.Status+" "+f.Path)
	}
	if got, want := strings.Join(order, ", "), "M assets/logo.png, D data/old.txt, A gen/big.txt, A price/boundary_test.go, M price/price.go"; got != want {
		t.Errorf("files %s, want %s", got, want)
	}
	price := byPath["price/price.go"]
	if price.BaseContent == nil || *price.BaseContent != string(basePrice) || price.HeadContent == nil || !strings.Contains(*price.HeadContent, "n > 10") {
		t.Errorf("price.go sides: %+v", price)
	}
	if price.BaseSize != int64(len(basePrice)) || price.Omitted != "" {
		t.Errorf("price.go: size %d omitted %q", price.BaseSize, price.Omitted)
	}
	if added := byPath["price/boundary_test.go"]; added.BaseContent != nil || added.HeadContent == nil || *added.HeadContent != "package price\n" {
		t.Errorf("added file: %+v", added)
	}
	if gone := byPath["data/old.txt"]; gone.HeadContent != nil || gone.BaseContent == nil || *gone.BaseContent != "gone soon\n" || gone.HeadSize != 0 {
		t.Errorf("deleted file: %+v", gone)
	}
	logo := byPath["assets/logo.png"]
	if !logo.Binary || logo.Omitted != command.OmittedBinary || logo.BaseContent != nil || logo.HeadContent != nil || logo.HeadSize != int64(len("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR new!")) || !strings.Contains(logo.Note, "binary") {
		t.Errorf("binary file: %+v", logo)
	}
	bigf := byPath["gen/big.txt"]
	if bigf.Omitted != command.OmittedLarge || bigf.HeadContent != nil || bigf.HeadSize != int64(len(big)) || !strings.Contains(bigf.Note, "too large") {
		t.Errorf("large file: %+v", bigf)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "gen/big.txt is too large") {
		t.Errorf("notes %q", d.Notes)
	}
	for _, want := range []string{
		"diff --git a/price/price.go b/price/price.go", "-\tif n >= 10 {", "+\tif n > 10 {",
		"Binary files a/assets/logo.png and b/assets/logo.png differ",
		"deleted file mode", "-gone soon",
	} {
		if !strings.Contains(d.Diff, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d.Diff)
		}
	}
	if strings.Contains(d.Diff, "gen/big.txt") || d.Truncated {
		t.Errorf("the large file is in the diff text (truncated %v)", d.Truncated)
	}
	if len(d.Diff) > command.DiffLimit {
		t.Errorf("diff text %d bytes", len(d.Diff))
	}

	// One file by path, through the command as well.
	var one command.TaskDiffResult
	if err := e.Execute(ctx, command.New("", command.TaskDiff, command.TaskDiffArgs{ID: tk.ID, Path: "price/price.go"}), &one); err != nil {
		t.Fatal(err)
	}
	if len(one.Files) != 1 || one.Files[0].Path != "price/price.go" || *one.Files[0].HeadContent != *price.HeadContent ||
		!strings.HasPrefix(one.Diff, "diff --git a/price/price.go b/price/price.go") || strings.Contains(one.Diff, "logo.png") {
		t.Errorf("one file: %+v", one)
	}

	// A task that has not committed anything yet: no branch, said so.
	fresh := seedTask(t, ctx, led, e.Dir, "not started", engine.TaskQueued)
	var none command.TaskDiffResult
	if err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": fresh.ID}, &none); err != nil {
		t.Fatal(err)
	}
	if none.Head != "" || len(none.Files) != 0 || none.Diff != "" || len(none.Notes) != 1 || !strings.Contains(none.Notes[0], "does not exist") {
		t.Errorf("no branch: %+v", none)
	}

	for _, c := range []struct {
		params map[string]any
		field  string
		says   string
	}{
		{map[string]any{}, "id", "id is required"},
		{map[string]any{"id": tk.ID, "path": "../etc/passwd"}, "path", "leaves the tree"},
		{map[string]any{"id": tk.ID, "path": "/etc/passwd"}, "path", "absolute path"},
		{map[string]any{"id": tk.ID, "path": "price/nothing.go"}, "path", "does not change price/nothing.go"},
		{map[string]any{"id": tk.ID, "path": 7}, "path", "path must be a string, got a number"},
	} {
		err := e.Conn.Call(ctx, server.MethodTaskDiff, c.params, nil)
		assertFieldError(t, err, c.field, c.says)
	}
	err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": "t-nope"}, nil)
	var le *lsp.Error
	if !errors.As(err, &le) || le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, "not found") {
		t.Errorf("unknown task: %v", err)
	}
}

func assertFieldError(t *testing.T, err error, field, says string) {
	t.Helper()
	var le *lsp.Error
	if !errors.As(err, &le) {
		t.Errorf("got %v, want an InvalidParams error about %s", err, field)
		return
	}
	if le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, says) {
		t.Errorf("got code %d %q, want InvalidParams saying %q", le.Code, le.Message, says)
	}
	var data struct {
		Field string `json:"field"`
	}
	if field != "" && (json.Unmarshal(le.Data, &data) != nil || data.Field != field) {
		t.Errorf("error data %s, want the field %q", le.Data, field)
	}
}

// TestTaskEventsNewest: bcode/task's eventsLimit returns the newest N
// events in chronological order and counts the older ones left out; with
// eventsAfter it pages from there.
func TestTaskEventsNewest(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	tk := seedTask(t, ctx, led, e.Dir, "many events", engine.TaskRunning)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= 30; i++ {
		data, _ := json.Marshal(map[string]int{"n": i})
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "turn.finished", Data: data, At: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	// Another task's events in between must not count.
	other := seedTask(t, ctx, led, e.Dir, "other", engine.TaskRunning)
	if _, err := led.Append(ctx, nil, &engine.Event{TaskID: other.ID, Kind: "attempt.started"}); err != nil {
		t.Fatal(err)
	}
	all, err := led.Events(ctx, tk.ID, 0, 0)
	if err != nil || len(all) != 31 { // task.created and 30 turns
		t.Fatalf("seeded %d events: %v", len(all), err)
	}
	n := func(ev engine.Event) int {
		var d struct{ N int }
		_ = json.Unmarshal(ev.Data, &d)
		return d.N
	}
	var d server.TaskDetail
	if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": tk.ID, "eventsLimit": 5}, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Events) != 5 || d.EventsOmitted != 26 {
		t.Fatalf("%d events, %d omitted; want the newest 5 and 26 omitted", len(d.Events), d.EventsOmitted)
	}
	for i, ev := range d.Events {
		if n(ev) != 26+i || ev.Seq != all[26+i].Seq {
			t.Errorf("event %d is turn %d (seq %d), want turn %d (seq %d)", i, n(ev), ev.Seq, 26+i, all[26+i].Seq)
		}
	}
	// After a seq: the newest of what follows it.
	if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": tk.ID, "eventsLimit": 3, "eventsAfter": all[20].Seq}, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Events) != 3 || n(d.Events[0]) != 28 || n(d.Events[2]) != 30 || d.EventsOmitted != 7 {
		t.Errorf("after seq %d: %d events from turn %d, %d omitted", all[20].Seq, len(d.Events), n(d.Events[0]), d.EventsOmitted)
	}
	// A limit above the count: everything, nothing omitted.
	if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": tk.ID, "eventsLimit": 500}, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Events) != 31 || d.Events[0].Kind != "task.created" || d.EventsOmitted != 0 {
		t.Errorf("limit 500: %d events, first %s, %d omitted", len(d.Events), d.Events[0].Kind, d.EventsOmitted)
	}
	// The task list's last event is the newest.
	var list server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Tasks {
		if s.ID == tk.ID && (s.LastEvent == nil || s.LastEvent.Seq != all[30].Seq || !s.LastEvent.At.Equal(at.Add(30*time.Minute))) {
			t.Errorf("last event %+v, want seq %d", s.LastEvent, all[30].Seq)
		}
	}
}

// TestTaskChangedCarriesTheEvent: bcode/taskChanged names the ledger
// event that changed the task, its kind and its time (RFC 3339).
func TestTaskChangedCarriesTheEvent(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	tk := seedTask(t, ctx, led, e.Dir, "to cancel", engine.TaskQueued)
	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCancel, command.TaskIDArgs{ID: tk.ID}), &res); err != nil {
		t.Fatal(err)
	}
	evs, err := led.Events(ctx, tk.ID, 0, 0)
	if err != nil || len(evs) == 0 {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	notes := e.Notifications(server.MethodTaskChanged)
	if len(notes) == 0 {
		t.Fatal("no bcode/taskChanged after cancel")
	}
	var raw map[string]any
	if err := json.Unmarshal(notes[len(notes)-1].Params, &raw); err != nil {
		t.Fatal(err)
	}
	at, _ := raw["at"].(string)
	when, err := time.Parse(time.RFC3339, at)
	if err != nil {
		t.Fatalf("at %q is not RFC 3339: %v", at, err)
	}
	if raw["id"] != tk.ID || raw["status"] != "cancelled" || raw["kind"] != string(last.Kind) || raw["event"] != string(last.Kind) || !when.Equal(last.At) || raw["seq"] != float64(last.Seq) {
		t.Errorf("bcode/taskChanged %s, want kind %s at %s seq %d", notes[len(notes)-1].Params, last.Kind, last.At.Format(time.RFC3339Nano), last.Seq)
	}
	if last.Kind != "task.cancelled" {
		t.Errorf("the ledger's last event is %s", last.Kind)
	}
}

// TestAcceptAndRejectMoveGit: accepting a verified task through bcode-ls
// fast-forwards the user's branch to the task's verified head (refused,
// with nothing changed, while the checkout is dirty); rejecting another
// deletes its branch and leaves the user's branch where it was.
func TestAcceptAndRejectMoveGit(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	base := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main"))
	good := seedTask(t, ctx, led, e.Dir, "pin the boundary", engine.TaskVerified)
	goodHead := commitOnBranch(t, e.Dir, good.Branch, func() {
		write(t, e.Dir, "price/boundary_test.go", []byte("package price\n\n// the boundary\n"))
	})
	// What a runner records for a verified task (engine/task): the turn
	// that committed, then the gate's verdict on exactly that head.
	// Without the turn, Accept would adopt the commit as unrecorded and
	// refuse the task as moved after its check.
	for _, ev := range []struct {
		kind engine.EventKind
		data map[string]any
	}{
		{"attempt.started", map[string]any{"number": 1}},
		{"turn.finished", map[string]any{"turn": 1, "commit": goodHead, "parent": base, "changed": []string{"price/boundary_test.go"}}},
		{"check.finished", map[string]any{"head": goodHead, "verdict": "verified"}},
		{"task.verified", map[string]any{"head": goodHead}},
	} {
		data, _ := json.Marshal(ev.data)
		if _, err := led.Append(ctx, nil, &engine.Event{TaskID: good.ID, Kind: ev.kind, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	bad := seedTask(t, ctx, led, e.Dir, "a change nobody wants", engine.TaskFailed)
	commitOnBranch(t, e.Dir, bad.Branch, func() {
		write(t, e.Dir, "price/price.go", []byte("package price\n"))
	})

	// Reject: the branch goes, main stays.
	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskReject, command.TaskIDArgs{ID: bad.ID}), &res); err != nil || res.Status != "rejected" {
		t.Fatalf("reject: %+v %v", res, err)
	}
	if got := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main")); got != base {
		t.Errorf("reject moved main to %s", got)
	}
	if out := fake.Git(t, e.Dir, "branch", "--list", bad.Branch); strings.TrimSpace(out) != "" {
		t.Errorf("the rejected task's branch is still there: %s", out)
	}

	// A dirty checkout: refused, nothing moved.
	write(t, e.Dir, "price/price.go", []byte("package price\n// edited\n"))
	err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: good.ID}), &res)
	var le *lsp.Error
	if !errors.As(err, &le) || le.Code != lsp.CodeRequestFailed || !strings.Contains(le.Message, "uncommitted changes") {
		t.Errorf("accept on a dirty checkout: %v", err)
	}
	if got := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main")); got != base {
		t.Errorf("a refused accept moved main to %s", got)
	}
	fake.Git(t, e.Dir, "checkout", "--", "price/price.go")

	if err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: good.ID}), &res); err != nil || res.Status != "accepted" {
		t.Fatalf("accept: %+v %v", res, err)
	}
	if got := strings.TrimSpace(fake.Git(t, e.Dir, "rev-parse", "main")); got != goodHead {
		t.Errorf("main is at %s, want the task's verified head %s", got, goodHead)
	}
	if got := fake.Git(t, e.Dir, "show", "main:price/boundary_test.go"); got != "package price\n\n// the boundary\n" {
		t.Errorf("main's price/boundary_test.go: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(e.Dir, "price", "boundary_test.go")); err != nil || !strings.Contains(string(b), "the boundary") {
		t.Errorf("the checkout lacks the accepted file: %v", err)
	}
	got, err := led.Task(ctx, good.ID)
	if err != nil || got.Status != engine.TaskAccepted {
		t.Errorf("ledger status after accept: %+v %v", got, err)
	}
}

// TestTaskDiffLimits: a change bigger than one answer may carry is cut,
// not sent whole: contents stop at ContentBudget (later files come without
// them, in order, and one by path brings them), and the diff text stops at
// DiffLimit on a file boundary.
func TestTaskDiffLimits(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	led := openLedger(t, ctx)
	tk := seedTask(t, ctx, led, e.Dir, "generate a lot", engine.TaskVerified)
	// 14 files of 200 KB each: each is under FileContentLimit, together
	// over both ContentBudget and DiffLimit.
	const n, size = 14, 200 << 10
	line := strings.Repeat("x", 99) + "\n"
	commitOnBranch(t, e.Dir, tk.Branch, func() {
		for i := 0; i < n; i++ {
			write(t, e.Dir, fmt.Sprintf("gen/f%02d.txt", i), []byte(strings.Repeat(line, size/len(line))))
		}
	})
	var d command.TaskDiffResult
	if err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": tk.ID}, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != n {
		t.Fatalf("%d files", len(d.Files))
	}
	sent, omitted := 0, 0
	for i, f := range d.Files {
		switch f.Omitted {
		case "":
			if omitted > 0 {
				t.Errorf("file %d has contents after an omitted one", i)
			}
			if f.HeadContent == nil || int64(len(*f.HeadContent)) != f.HeadSize {
				t.Errorf("file %s: contents missing or cut", f.Path)
			}
			sent += len(*f.HeadContent)
		case command.OmittedBudget:
			omitted++
			if f.HeadContent != nil || f.HeadSize == 0 || !strings.Contains(f.Note, "budget") {
				t.Errorf("budget-omitted file %+v", f)
			}
		default:
			t.Errorf("file %s omitted as %s", f.Path, f.Omitted)
		}
	}
	if sent > command.ContentBudget || omitted == 0 || sent == 0 {
		t.Errorf("%d bytes of contents sent, %d files omitted; the budget is %d", sent, omitted, command.ContentBudget)
	}
	if !d.Truncated || len(d.Diff) > command.DiffLimit || len(d.Diff) < command.DiffLimit/2 {
		t.Errorf("diff text: %d bytes, truncated %v", len(d.Diff), d.Truncated)
	}
	files := strings.Count(d.Diff, "diff --git ")
	if files == 0 || files >= n || !strings.HasSuffix(d.Diff, line) {
		t.Errorf("the diff is not cut on a file boundary: %d files, ends %q", files, d.Diff[max(0, len(d.Diff)-40):])
	}
	var notes = strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, fmt.Sprintf("%d files come without contents", omitted)) || !strings.Contains(notes, "the diff text is cut") {
		t.Errorf("notes %q", d.Notes)
	}
	// The last file, by path: its contents come.
	last := d.Files[n-1]
	var one command.TaskDiffResult
	if err := e.Conn.Call(ctx, server.MethodTaskDiff, map[string]any{"id": tk.ID, "path": last.Path}, &one); err != nil {
		t.Fatal(err)
	}
	if len(one.Files) != 1 || one.Files[0].Omitted != "" || one.Files[0].HeadContent == nil || int64(len(*one.Files[0].HeadContent)) != last.HeadSize || one.Truncated {
		t.Errorf("one file by path: %+v", one.Files)
	}
}

// TestTaskThatCannotStartIsExplained: a task started from the editor whose
// runner cannot get going (here: no model answers at the base config's
// endpoint) is not left as a silent queued row: the user gets an error
// message with the reason, the progress ends with it, bcode/taskChanged
// carries it, and bcode/tasks shows it while the task stays queued.
func TestTaskThatCannotStartIsExplained(t *testing.T) {
	// An agent backend is wired (as in bcode-ls); the model probe comes first.
	e, ctx := setup(t, "boundary.txtar", server.Options{AgentBackend: func(context.Context, config.Config, engine.Task) (runner.Agent, error) {
		return nil, errors.New("the agent backend must not be reached: the model probe fails first")
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	write(t, e.Dir, ".bcode/config.toml", []byte(fmt.Sprintf("[model]\nendpoint = \"http://%s\"\n", closed)))
	fake.Git(t, e.Dir, "add", ".bcode/config.toml")
	fake.Git(t, e.Dir, "commit", "-qm", "model endpoint nobody serves")

	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCreate, command.TaskCreateArgs{Goal: "pin the boundary", Run: true}), &res); err != nil {
		t.Fatal(err)
	}
	if res.ID == "" {
		t.Fatalf("no task created: %+v", res)
	}
	var msg string
	if err := e.Await(ctx, "the error message", func() bool {
		for _, m := range e.MessagesLocked() {
			if strings.Contains(m, "task "+res.ID+" could not start: ") {
				msg = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v; messages: %q", err, e.Messages())
	}
	if !strings.Contains(msg, closed) {
		t.Errorf("the message does not name the endpoint that did not answer: %q", msg)
	}
	var token string
	for _, p := range e.ProgressReports() {
		if p.Kind == "begin" && p.Title == "bcode task "+res.ID {
			token = p.Token
		}
	}
	ended, err := e.AwaitProgressEnd(ctx, token)
	if err != nil || !strings.HasPrefix(ended, "could not start: ") {
		t.Errorf("the task's progress (%q) ended with %q (%v), not the reason", token, ended, err)
	}
	var changed map[string]any
	for _, n := range e.Notifications(server.MethodTaskChanged) {
		var c map[string]any
		if json.Unmarshal(n.Params, &c) == nil && c["kind"] == "task.start_failed" {
			changed = c
		}
	}
	if changed == nil || changed["status"] != "queued" || !strings.HasPrefix(fmt.Sprint(changed["reason"]), "could not start: ") {
		t.Errorf("bcode/taskChanged with the reason: %v", changed)
	}
	var list server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].Status != "queued" || !strings.HasPrefix(list.Tasks[0].Reason, "could not start: ") {
		t.Errorf("bcode/tasks: %+v", list.Tasks)
	}
}

// TestModuleApprovalAskedInTheEditor: a module.approval_needed event (the
// agent's code needs a module its base does not use) is a question to the
// user in the editor (window/showMessageRequest), asked once; their
// "Approve" records module.approved in the ledger, which is what lets the
// host fetch it. bcode.task.approveModule says yes directly, and refuses a
// bad module version before anything is recorded.
func TestModuleApprovalAskedInTheEditor(t *testing.T) {
	t.Setenv("BCODE_STATE", t.TempDir())
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	e := fake.Connect(t, dir, server.Options{NoEvidenceOnOpen: true, Debounce: 50 * time.Millisecond, CacheDir: t.TempDir()})
	e.Answer = "Approve"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	led := openLedger(t, ctx)
	tk := seedTask(t, ctx, led, dir, "needs a module", engine.TaskRunning)
	if _, err := e.Initialize(ctx, fake.Config{}); err != nil {
		t.Fatal(err)
	}
	// The task watcher starts from the end of the ledger: let it see where
	// that is before the event comes.
	time.Sleep(1500 * time.Millisecond)
	const mod = "golang.org/x/text@v0.14.0"
	if _, err := led.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: "module.approval_needed", Data: json.RawMessage(`{"module":"` + mod + `","why":"go.mod requires it"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Await(ctx, "the question", func() bool {
		for _, q := range e.AskedLocked() {
			if strings.Contains(q, "task "+tk.ID+" needs module "+mod) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	approved := func() int {
		evs, err := led.Events(ctx, tk.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Kind == "module.approved" && strings.Contains(string(ev.Data), mod) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for approved() == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if approved() != 1 {
		t.Fatalf("the user's Approve recorded %d module.approved events", approved())
	}
	time.Sleep(2 * time.Second) // the watcher ticks again: no second question
	e.Answer = ""
	n := 0
	if err := e.Await(ctx, "count", func() bool { n = len(e.AskedLocked()); return true }); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("asked %d times, want once", n)
	}
	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskApproveModule, command.TaskModuleArgs{ID: tk.ID, Module: "golang.org/x/net@v0.20.0"}), &res); err != nil || !strings.Contains(res.Message, "approved golang.org/x/net@v0.20.0") {
		t.Errorf("approveModule: %+v %v", res, err)
	}
	err := e.Execute(ctx, command.New("", command.TaskApproveModule, command.TaskModuleArgs{ID: tk.ID, Module: "example.com/m@latest?x=1"}), &res)
	if err == nil {
		t.Errorf("a bad module version was approved")
	}
	if approved() != 1 {
		t.Errorf("the refused approval wrote an event")
	}
}
