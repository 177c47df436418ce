package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify/mutate"
)

func needGo(t *testing.T) {
	t.Helper()
	testenv.Go(t)
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// setup makes a repository from a fixture and an editor connected to a
// fresh server; the ledger lives in the test's own state dir.
func setup(t *testing.T, name string, opts server.Options) (*fake.Editor, context.Context) {
	t.Helper()
	t.Setenv("BCODE_STATE", t.TempDir())
	dir := fake.Repo(t, fixture(t, name))
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir() // mutate's coverage cache, not GOCACHE
	}
	if opts.Debounce == 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	opts.NoWatch = true // the tests drive saves; watch_test covers the disk
	// The tests count runs from their own saves; TestEvidenceOnOpen covers
	// the run at start.
	opts.NoEvidenceOnOpen = true
	e := fake.Connect(t, dir, opts)
	// A bound, not a budget: a loaded two-core machine makes a test with
	// several evidence runs take over a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	if _, err := e.Initialize(ctx, fake.Config{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return e, ctx
}

// rangeText is the text a range selects, counting UTF-16 units as LSP does.
func rangeText(text string, r lsp.Range) string {
	lines := strings.SplitAfter(text, "\n")
	if int(r.Start.Line) >= len(lines) || r.Start.Line != r.End.Line {
		return "<range spans lines or is out of the text>"
	}
	u := utf16.Encode([]rune(lines[r.Start.Line]))
	if int(r.End.Character) > len(u) {
		return "<range past the end of the line>"
	}
	return string(utf16.Decode(u[r.Start.Character:r.End.Character]))
}

func evidence(t *testing.T, ctx context.Context, e *fake.Editor, wait bool) server.EvidenceReport {
	t.Helper()
	var rep server.EvidenceReport
	if err := e.Conn.Call(ctx, server.MethodEvidence, map[string]any{"wait": wait}, &rep); err != nil {
		t.Fatalf("bcode/evidence: %v", err)
	}
	return rep
}

func warnings(ds []lsp.Diagnostic) []lsp.Diagnostic {
	var out []lsp.Diagnostic
	for _, d := range ds {
		if d.Severity == lsp.SeverityWarning {
			out = append(out, d)
		}
	}
	return out
}

func titles(as []lsp.CodeAction) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Title)
	}
	return out
}

func find(as []lsp.CodeAction, title string) *lsp.CodeAction {
	for i := range as {
		if strings.HasPrefix(as[i].Title, title) {
			return &as[i]
		}
	}
	return nil
}

// TestEvidenceInTheEditor is the editor's whole evidence loop on a real
// repository: a save publishes the surviving mutants on their exact ranges
// (after a non-BMP character, so UTF-16 counting matters), progress begins
// and ends, the diagnostics follow edits and vanish with their line, code
// actions are offered where they belong and their commands round-trip, an
// unchanged result is not republished, and adding the missing test clears
// the diagnostics.
func TestEvidenceInTheEditor(t *testing.T) {
	needGo(t)
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	const file = "price/price.go"
	if err := e.Open(ctx, file); err != nil {
		t.Fatal(err)
	}
	// The change: a stricter boundary, after an emoji the mutant's range
	// must count as two UTF-16 units.
	ds, byID := saveAndAwaitSurvivors(t, ctx, e, file, "if n >= 10 {", "if /* 🛒 */ n > 10 {")
	text := e.Buffer(file)
	var survivor lsp.Diagnostic
	for _, d := range warnings(ds) {
		var data server.MutantData
		if err := json.Unmarshal(d.Data, &data); err != nil || data.ID == "" {
			t.Fatalf("diagnostic data %s does not carry a mutant ID: %v", d.Data, err)
		}
		id := data.ID
		m, ok := byID[id]
		if !ok || m.Verdict != mutate.Survived {
			t.Fatalf("diagnostic names mutant %q, which the report does not list as survived", id)
		}
		if d.Source != "bcode" || d.Code != m.Operator {
			t.Errorf("source %q code %q, want bcode and %s", d.Source, d.Code, m.Operator)
		}
		if !strings.Contains(d.Message, m.Mutated) {
			t.Errorf("message %q does not show the mutated text %q", d.Message, m.Mutated)
		}
		if got := rangeText(text, d.Range); got != m.Original {
			t.Errorf("range %+v selects %q, want the mutant's original text %q", d.Range, got, m.Original)
		}
		if d.Range.Start.Line != 4 {
			t.Errorf("diagnostic on line %d, want line 4 (0-based)", d.Range.Start.Line)
		}
		if len(d.RelatedInformation) == 0 || !strings.HasSuffix(d.RelatedInformation[0].Location.URI, "price_test.go") ||
			d.RelatedInformation[0].Location.Range.Start.Line != 4 {
			t.Errorf("related information %+v does not point at TestDiscount in price_test.go line 5", d.RelatedInformation)
		}
		// The data carries the covering tests as data, each with its
		// declaration: the code actions read them from there.
		if data.Verdict != mutate.Survived || len(data.Tests) != len(m.Tests) || len(data.Tests) == 0 ||
			data.Tests[0].Name != m.Tests[0] || data.Tests[0].Location == nil ||
			!strings.HasSuffix(data.Tests[0].Location.URI, "price_test.go") || data.Tests[0].Location.Range.Start.Line != 4 {
			t.Errorf("data %s does not carry the verdict and the covering tests %v with their declarations", d.Data, m.Tests)
		}
		if m.Operator == mutate.OpConditionalBoundary {
			survivor = d
		}
	}
	if survivor.Message == "" {
		t.Fatalf("no conditional_boundary survivor among %d warnings", len(warnings(ds)))
	}
	// The mutant covers "n > 10", after "\tif /* 🛒 */ ": 1+3+3+2+4 = 13
	// UTF-16 units (the emoji is two), where byte columns would say 15.
	if survivor.Range.Start.Character != 13 {
		t.Errorf("boundary mutant starts at character %d, want 13 (UTF-16 units)", survivor.Range.Start.Character)
	}

	t.Run("progress begins and ends", func(t *testing.T) {
		var began, ended bool
		for _, p := range e.ProgressReports() {
			began = began || (p.Kind == "begin" && p.Title == "bcode evidence" && p.Cancellable)
			ended = ended || (p.Kind == "end" && strings.Contains(p.Message, "survive"))
		}
		if !began || !ended {
			t.Errorf("progress begin %v end %v: %+v", began, ended, e.ProgressReports())
		}
	})

	t.Run("code actions", func(t *testing.T) {
		// The cursor on the diagnostic, as an editor's lightbulb asks.
		cursor := lsp.Range{Start: survivor.Range.Start, End: survivor.Range.Start}
		as, err := e.CodeActions(ctx, file, cursor, []lsp.Diagnostic{survivor})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{command.TitleShowMutant, command.TitleAddTest, command.TitlePreviewPack, command.TitleRunEvidence} {
			if find(as, want) == nil {
				t.Errorf("no %q on the diagnostic; got %q", want, titles(as))
			}
		}
		if find(as, command.TitleCreateTask) != nil {
			t.Errorf("create-task offered on an empty range")
		}
		add := find(as, command.TitleAddTest)
		var args command.TaskCreateArgs
		if err := json.Unmarshal(add.Command.Arguments[0], &args); err != nil {
			t.Fatal(err)
		}
		var sd server.MutantData
		_ = json.Unmarshal(survivor.Data, &sd)
		sid := sd.ID
		if args.MutantID != sid || !strings.Contains(args.Goal, sid) || !strings.Contains(args.Goal, byID[sid].Mutated) {
			t.Errorf("add-a-test task %+v does not name the mutant %s", args, sid)
		}

		// A selection elsewhere: create-task, but no mutant actions.
		sel := lsp.Range{Start: lsp.Position{Line: 2, Character: 0}, End: lsp.Position{Line: 3, Character: 5}}
		as, err = e.CodeActions(ctx, file, sel, nil)
		if err != nil {
			t.Fatal(err)
		}
		if find(as, command.TitleCreateTask) == nil || find(as, command.TitleShowMutant) != nil {
			t.Errorf("on a selection without diagnostics got %q", titles(as))
		}
		// A client that sends no diagnostics still gets the mutant actions
		// when the range touches one.
		as, err = e.CodeActions(ctx, file, lsp.Range{Start: survivor.Range.Start, End: survivor.Range.Start}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if find(as, command.TitleShowMutant) == nil {
			t.Errorf("no mutant actions at the mutant's position without client diagnostics: %q", titles(as))
		}
	})

	t.Run("show mutant diff round-trips", func(t *testing.T) {
		as, _ := e.CodeActions(ctx, file, survivor.Range, []lsp.Diagnostic{survivor})
		show := find(as, command.TitleShowMutant)
		var res command.DocumentResult
		if err := e.Execute(ctx, *show.Command, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Shown || !strings.HasPrefix(res.URI, "bcode-mutant:") {
			t.Errorf("result %+v: not shown on a bcode-mutant: URI", res)
		}
		if !strings.Contains(res.Text, "-\tif /* 🛒 */ n > 10 {") || !strings.Contains(res.Text, "+\tif /* 🛒 */ n >= 10 {") {
			t.Errorf("diff does not show the boundary change:\n%s", res.Text)
		}
		var content struct {
			Text string `json:"text"`
		}
		if err := e.Conn.Call(ctx, "workspace/textDocumentContent", map[string]any{"uri": res.URI}, &content); err != nil {
			t.Fatal(err)
		}
		if content.Text != res.Text {
			t.Errorf("textDocumentContent differs from the command's text")
		}
		if err := e.Conn.Call(ctx, server.MethodDocumentContent, map[string]any{"uri": res.URI}, &content); err != nil || content.Text != res.Text {
			t.Errorf("the plain-request fallback: %v", err)
		}
		if got := e.Shown(); len(got) == 0 || got[len(got)-1] != res.URI {
			t.Errorf("window/showDocument not sent for %s: %v", res.URI, got)
		}
	})

	t.Run("add a test task names the mutant", func(t *testing.T) {
		as, _ := e.CodeActions(ctx, file, survivor.Range, []lsp.Diagnostic{survivor})
		add := find(as, command.TitleAddTest)
		var res command.TaskResult
		if err := e.Execute(ctx, *add.Command, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != "queued" {
			t.Errorf("new task status %q, want queued", res.Status)
		}
		if n := e.Notifications(server.MethodTaskChanged); len(n) == 0 {
			t.Errorf("no bcode/taskChanged after creating a task")
		}
		var detail server.TaskDetail
		if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": res.ID}, &detail); err != nil {
			t.Fatal(err)
		}
		var sd server.MutantData
		_ = json.Unmarshal(survivor.Data, &sd)
		sid := sd.ID
		if !strings.Contains(detail.Task.Goal, sid) {
			t.Errorf("task goal %q does not name mutant %s", detail.Task.Goal, sid)
		}
	})

	t.Run("diagnostics follow edits and vanish with their line", func(t *testing.T) {
		if err := e.Edit(ctx, file, "func Discount(n int) int {\n", "func Discount(n int) int {\n\t// moved\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.AwaitDiagnostics(ctx, file, "the survivor one line down", func(ds []lsp.Diagnostic) bool {
			w := warnings(ds)
			return len(w) > 0 && w[0].Range.Start.Line == 5
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.Edit(ctx, file, "\tif /* 🛒 */ n > 10 {\n", "\tif /* 🛒 */ n > 11 {\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.AwaitDiagnostics(ctx, file, "no diagnostics on the edited line", func(ds []lsp.Diagnostic) bool { return len(ds) == 0 }); err != nil {
			t.Fatal(err)
		}
		// Undo both edits: the report still holds, so they come back.
		if err := e.Edit(ctx, file, "\t// moved\n\tif /* 🛒 */ n > 11 {\n", "\tif /* 🛒 */ n > 10 {\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.AwaitDiagnostics(ctx, file, "the survivors back on line 4", func(ds []lsp.Diagnostic) bool {
			w := warnings(ds)
			return len(w) > 0 && w[0].Range.Start.Line == 4
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("unchanged diagnostics are not republished", func(t *testing.T) {
		before := e.Publishes(file)
		var res command.EvidenceRunResult
		if err := e.Execute(ctx, command.New("", command.EvidenceRun, command.EvidenceRunArgs{}), &res); err != nil {
			t.Fatal(err)
		}
		if rep := evidence(t, ctx, e, true); rep.Run != res.Run || rep.State != "done" {
			t.Fatalf("run %d state %q, want run %d done", rep.Run, rep.State, res.Run)
		}
		if _, err := e.AwaitProgressEnd(ctx, res.Token); err != nil {
			t.Fatal(err)
		}
		if after := e.Publishes(file); after != before {
			t.Errorf("a run with the same result republished %s (%d -> %d publishes)", file, before, after)
		}
	})

	t.Run("adding the boundary test clears them", func(t *testing.T) {
		const test = "price/price_test.go"
		if err := e.Open(ctx, test); err != nil {
			t.Fatal(err)
		}
		if err := e.Edit(ctx, test, "\tif Discount(1) != 0 {", "\tif Discount(10) != 0 || Discount(11) != 5 {\n\t\tt.Fatal(\"the boundary is 10 items\")\n\t}\n\tif Discount(1) != 0 {"); err != nil {
			t.Fatal(err)
		}
		if err := e.Save(ctx, test); err != nil {
			t.Fatal(err)
		}
		if _, err := e.AwaitDiagnostics(ctx, file, "no surviving mutant", func(ds []lsp.Diagnostic) bool { return len(warnings(ds)) == 0 }); err != nil {
			t.Fatalf("%v (report: %+v)", err, evidence(t, ctx, e, false))
		}
	})
}

// TestCancel: a newer save cancels the run under way, and cancelling the
// progress in the editor stops a run; both end their progress.
func TestCancel(t *testing.T) {
	needGo(t)
	e, ctx := setup(t, "slow.txtar", server.Options{Debounce: 10 * time.Millisecond})
	const file = "calc/calc.go"
	if err := e.Open(ctx, file); err != nil {
		t.Fatal(err)
	}
	// First run: from a save.
	if err := e.Save(ctx, file); err != nil {
		t.Fatal(err)
	}
	var first string
	if err := e.Await(ctx, "the first run's progress", func() bool {
		for _, p := range e.ProgressReportsLocked() {
			if p.Kind == "begin" {
				first = p.Token
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	// A newer save supersedes it.
	if err := e.Save(ctx, file); err != nil {
		t.Fatal(err)
	}
	msg, err := e.AwaitProgressEnd(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if msg != "cancelled" {
		t.Errorf("first run ended with %q, want cancelled", msg)
	}
	// The second run: cancelled from the editor.
	var second string
	if err := e.Await(ctx, "the second run's progress", func() bool {
		for _, p := range e.ProgressReportsLocked() {
			if p.Kind == "begin" && p.Token != first {
				second = p.Token
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := e.CancelProgress(ctx, second); err != nil {
		t.Fatal(err)
	}
	if msg, err := e.AwaitProgressEnd(ctx, second); err != nil || msg != "cancelled" {
		t.Fatalf("second run ended with %q, %v; want cancelled", msg, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if rep := evidence(t, ctx, e, true); rep.State != "cancelled" {
		t.Errorf("last report state %q, want cancelled", rep.State)
	}
}

// TestBadRequests: every bad request gets an LSP error with a clear
// message, and the server keeps serving.
func TestBadRequests(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	cases := []struct {
		name, method string
		params       any
		code         int
		says         string
	}{
		{"unknown task", server.MethodTask, map[string]any{"id": "t-nope"}, lsp.CodeInvalidParams, "not found"},
		{"malformed params", server.MethodTask, map[string]any{"id": 5}, lsp.CodeInvalidParams, "bcode/task: id must be a string, got a number"},
		{"unknown field", server.MethodTasks, map[string]any{"repo": "x"}, lsp.CodeInvalidParams, "unknown field"},
		{"unknown method", "bcode/nothing", map[string]any{}, lsp.CodeMethodNotFound, "bcode/tasks"},
		{"file outside the workspace", "textDocument/codeAction", map[string]any{
			"textDocument": map[string]any{"uri": "file:///etc/passwd"},
			"range":        lsp.Range{},
			"context":      map[string]any{"diagnostics": []any{}},
		}, lsp.CodeInvalidParams, "outside the workspace"},
		{"unknown command", "workspace/executeCommand", map[string]any{"command": "bcode.nope", "arguments": []any{}}, lsp.CodeInvalidParams, "unknown command"},
		{"malformed command argument", "workspace/executeCommand", map[string]any{"command": command.TaskRun, "arguments": []any{map[string]any{"id": true}}}, lsp.CodeInvalidParams, "bcode.task.run: id must be a string, got a bool"},
		{"too many arguments", "workspace/executeCommand", map[string]any{"command": command.TaskRun, "arguments": []any{map[string]any{}, map[string]any{}}}, lsp.CodeInvalidParams, "one argument"},
		{"run of an unknown task", "workspace/executeCommand", map[string]any{"command": command.TaskRun, "arguments": []any{map[string]any{"id": "t-nope"}}}, lsp.CodeInvalidParams, "bcode/tasks"},
		{"empty goal", "workspace/executeCommand", map[string]any{"command": command.TaskCreate, "arguments": []any{map[string]any{"goal": " "}}}, lsp.CodeInvalidParams, "goal is empty"},
		{"unknown mutant", "workspace/executeCommand", map[string]any{"command": command.MutantDiff, "arguments": []any{map[string]any{"id": "m-nope"}}}, lsp.CodeInvalidParams, "no mutant"},
		{"bad base", "workspace/executeCommand", map[string]any{"command": command.EvidenceRun, "arguments": []any{map[string]any{"base": "no-such-rev"}}}, lsp.CodeInvalidParams, "not a revision"},
		{"unknown document", "workspace/textDocumentContent", map[string]any{"uri": "bcode-pack:/99/none.md"}, lsp.CodeInvalidParams, "run the command again"},
		{"foreign scheme", server.MethodDocumentContent, map[string]any{"uri": "https://example.com/"}, lsp.CodeInvalidParams, "serves only"},
		{"selection past the end", "workspace/executeCommand", map[string]any{"command": command.PackPreview, "arguments": []any{map[string]any{
			"uri": e.URI("price/price.go"), "range": lsp.Range{Start: lsp.Position{Line: 900}, End: lsp.Position{Line: 901}}}}}, lsp.CodeInvalidParams, "has 10 lines"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.Conn.Call(ctx, c.method, c.params, nil)
			var le *lsp.Error
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want an LSP error", err)
			}
			if le.Code != c.code || !strings.Contains(le.Message, c.says) {
				t.Errorf("got code %d %q, want code %d saying %q", le.Code, le.Message, c.code, c.says)
			}
		})
	}
	var tasks server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &tasks); err != nil {
		t.Fatalf("the server stopped serving after bad requests: %v", err)
	}
}

// TestNotGit: a workspace that is not a git checkout answers evidence with
// an error saying so.
func TestNotGit(t *testing.T) {
	t.Setenv("BCODE_STATE", t.TempDir())
	dir := t.TempDir()
	e := fake.Connect(t, dir, server.Options{NoWatch: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Initialize(ctx, fake.Config{}); err != nil {
		t.Fatal(err)
	}
	err := e.Execute(ctx, command.New("", command.EvidenceRun, command.EvidenceRunArgs{}), nil)
	var le *lsp.Error
	if !errors.As(err, &le) || le.Code != lsp.CodeRequestFailed || !strings.Contains(le.Message, "not a git checkout") {
		t.Fatalf("got %v, want a request error saying the workspace is not a git checkout", err)
	}
}

// TestNoWorkspace: initialize without a root is refused with the fix.
func TestNoWorkspace(t *testing.T) {
	e := fake.Connect(t, "", server.Options{NoWatch: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.Conn.Call(ctx, "initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, nil)
	var le *lsp.Error
	if !errors.As(err, &le) || !strings.Contains(le.Message, "rootUri or workspaceFolders") {
		t.Fatalf("got %v", err)
	}
}

// TestTasksAndPacks: bcode/tasks and bcode/task read the ledger, with the
// last event; the pack preview and bcode/contextPack round-trip; task
// lifecycle commands answer clearly while the task engine is missing.
func TestTasksAndPacks(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	var tasks server.TasksResult
	if err := e.Conn.Call(ctx, server.MethodTasks, map[string]any{}, &tasks); err != nil {
		t.Fatal(err)
	}
	if len(tasks.Tasks) != 0 {
		t.Fatalf("fresh state lists tasks: %+v", tasks)
	}
	// A task recorded by another bcode process (the CLI) shows up.
	path, err := ledger.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	task := &engine.Task{ID: ledger.NewTaskID(), Repo: e.Dir, Goal: "tighten the discount boundary", Base: "HEAD", Status: engine.TaskQueued}
	task.Branch = "bcode/" + task.ID
	if err := led.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if err := e.Conn.Call(ctx, server.MethodTasks, nil, &tasks); err != nil {
		t.Fatal(err)
	}
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].ID != task.ID || tasks.Tasks[0].Status != "queued" || tasks.Tasks[0].Branch != task.Branch {
		t.Fatalf("bcode/tasks = %+v", tasks)
	}
	if tasks.Tasks[0].LastEvent == nil || tasks.Tasks[0].LastEvent.Kind != "task.created" {
		t.Errorf("last event %+v, want task.created", tasks.Tasks[0].LastEvent)
	}
	var detail server.TaskDetail
	if err := e.Conn.Call(ctx, server.MethodTask, map[string]any{"id": task.ID}, &detail); err != nil {
		t.Fatal(err)
	}
	if detail.Task.Goal != task.Goal || len(detail.Events) == 0 {
		t.Errorf("bcode/task = %+v", detail)
	}

	// Run: this build has no agent backend yet, and says so at once.
	err = e.Execute(ctx, command.New("", command.TaskRun, command.TaskIDArgs{ID: task.ID}), nil)
	var le *lsp.Error
	if err != nil && (!errors.As(err, &le) || le.Code != lsp.CodeRequestFailed || !strings.Contains(le.Message, "agent")) {
		t.Errorf("task run: %v, want a request error naming the missing agent", err)
	}
	// Cancel and reject go through engine/task and land in the ledger.
	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCancel, command.TaskIDArgs{ID: task.ID}), &res); err != nil || res.Status != "cancelled" {
		t.Errorf("cancel: %+v %v", res, err)
	}
	if err := e.Execute(ctx, command.New("", command.TaskReject, command.TaskIDArgs{ID: task.ID}), &res); err != nil || res.Status != "rejected" {
		t.Errorf("reject: %+v %v", res, err)
	}
	if err := e.Execute(ctx, command.New("", command.TaskAccept, command.TaskAcceptArgs{ID: task.ID}), nil); !errors.As(err, &le) || le.Code != lsp.CodeRequestFailed {
		t.Errorf("accepting a rejected task: %v, want a request error", err)
	}
	if got := e.Notifications(server.MethodTaskChanged); len(got) < 2 {
		t.Errorf("bcode/taskChanged sent %d times for cancel and reject", len(got))
	}

	// Pack preview: shown on a bcode-pack: URI, served by both content routes.
	sel := lsp.Range{Start: lsp.Position{Line: 3}, End: lsp.Position{Line: 8}}
	var doc command.DocumentResult
	if err := e.Execute(ctx, command.New("", command.PackPreview, command.PackArgs{URI: e.URI("price/price.go"), Range: &sel}), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Shown || !strings.HasPrefix(doc.URI, "bcode-pack:") || !strings.Contains(doc.Text, "# Context pack") || !strings.Contains(doc.Text, "func Discount") {
		t.Errorf("pack preview %+v", doc)
	}
	var content struct {
		Text string `json:"text"`
	}
	if err := e.Conn.Call(ctx, "workspace/textDocumentContent", map[string]any{"uri": doc.URI}, &content); err != nil || content.Text != doc.Text {
		t.Errorf("textDocumentContent of the pack: %v", err)
	}
	var sum server.PackSummary
	if err := e.Conn.Call(ctx, server.MethodContextPack, command.PackArgs{URI: e.URI("price/price.go"), Range: &sel, Budget: 2000}, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Budget != 2000 || sum.Total == 0 || sum.Total > 2000 || len(sum.Sections) == 0 || len(sum.Files) == 0 {
		t.Errorf("bcode/contextPack = %+v", sum)
	}
	for _, s := range sum.Sections {
		if s.Title == "" || s.Tokens <= 0 {
			t.Errorf("section %+v has no title or tokens", s)
		}
	}
}

// TestOrderedDocumentSync: a burst of incremental edits is applied in the
// order sent; the server's copy (seen through the goal of a create-task
// action, which quotes the selection) matches the editor's.
func TestOrderedDocumentSync(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	const file = "price/price.go"
	if err := e.Open(ctx, file); err != nil {
		t.Fatal(err)
	}
	// Each edit inserts a letter right before "int)", at a position the
	// edits before it moved: applied out of order, the letters would land
	// elsewhere.
	for i := 0; i < 200; i++ {
		if err := e.Edit(ctx, file, "int)", string(rune('a'+i%26))+"int)"); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Split(e.Buffer(file), "\n")[3]
	as, err := e.CodeActions(ctx, file, lsp.Range{Start: lsp.Position{Line: 3}, End: lsp.Position{Line: 3, Character: 200}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	create := find(as, command.TitleCreateTask)
	if create == nil {
		t.Fatalf("no create-task action: %q", titles(as))
	}
	var args command.TaskCreateArgs
	_ = json.Unmarshal(create.Command.Arguments[0], &args)
	if !strings.HasSuffix(args.Goal, want[:60]+"…") && !strings.HasSuffix(args.Goal, strings.TrimSpace(want)) {
		t.Errorf("server's line 4 %q differs from the editor's %q", args.Goal, want)
	}
}

// saveAndAwaitSurvivors makes one edit to the open file, saves it, waits
// for its surviving-mutant warnings and returns them with the finished
// evidence run's mutants by ID.
func saveAndAwaitSurvivors(t *testing.T, ctx context.Context, e *fake.Editor, file, old, new string) ([]lsp.Diagnostic, map[string]mutate.Mutant) {
	t.Helper()
	if err := e.Edit(ctx, file, old, new); err != nil {
		t.Fatal(err)
	}
	if err := e.Save(ctx, file); err != nil {
		t.Fatal(err)
	}
	ds, err := e.AwaitDiagnostics(ctx, file, "a surviving mutant", func(ds []lsp.Diagnostic) bool { return len(warnings(ds)) > 0 })
	if err != nil {
		t.Fatalf("%v; messages: %v", err, e.Messages())
	}
	rep := evidence(t, ctx, e, true)
	if rep.State != "done" {
		t.Fatalf("evidence state %q: %s", rep.State, rep.Error)
	}
	byID := map[string]mutate.Mutant{}
	for _, m := range rep.Mutants {
		byID[m.ID] = m
	}
	return ds, byID
}
