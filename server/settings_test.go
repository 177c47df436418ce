package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/server/lsp"
)

// connectOpen connects to dir with the default settings, evidence on open
// included, and initializes with cfg.
func connectOpen(t *testing.T, dir string, cfg fake.Config) (*fake.Editor, context.Context) {
	t.Helper()
	t.Setenv("BCODE_STATE", t.TempDir())
	e := fake.Connect(t, dir, server.Options{NoWatch: true, Debounce: 50 * time.Millisecond, CacheDir: t.TempDir()})
	// Generous: the first run builds and covers a package, slow on a
	// loaded two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	if _, err := e.Initialize(ctx, cfg); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return e, ctx
}

// TestEvidenceOnOpenShowsTheLastCommit: diagnostics come without a save
// (the run at start), and on main with a clean tree and no upstream the
// change judged is the last commit, said in the report's notes.
func TestEvidenceOnOpenShowsTheLastCommit(t *testing.T) {
	needGo(t)
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	write(t, dir, "price/price.go", []byte("package price\n\n// Discount returns the discount in percent for a basket of n items.\nfunc Discount(n int) int {\n\tif n > 10 {\n\t\treturn 5\n\t}\n\treturn 0\n}\n"))
	fake.Git(t, dir, "commit", "-qam", "discount from 11 items")
	e, ctx := connectOpen(t, dir, fake.Config{})
	if _, err := e.AwaitDiagnostics(ctx, "price/price.go", "the survivor with no save", func(ds []lsp.Diagnostic) bool { return len(warnings(ds)) > 0 }); err != nil {
		t.Fatalf("%v; messages %q", err, e.Messages())
	}
	rep := evidence(t, ctx, e, true)
	if rep.Reason != "open" || !strings.Contains(strings.Join(rep.Notes, "\n"), "the last commit") {
		t.Errorf("run reason %q, notes %q: want the run at open on the last commit", rep.Reason, rep.Notes)
	}
}

// TestNoChangeSaysSo: a checkout with nothing to judge says that, not
// "the change has no Go files", and not "0 of 0 mutants survive".
func TestNoChangeSaysSo(t *testing.T) {
	needGo(t)
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	e, ctx := connectOpen(t, dir, fake.Config{})
	var rep server.EvidenceReport
	deadline := time.Now().Add(60 * time.Second)
	for rep.State != "done" && time.Now().Before(deadline) {
		rep = evidence(t, ctx, e, true)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "no change: the working tree is the base") || strings.Contains(notes, "no Go files") {
		t.Errorf("notes %q", rep.Notes)
	}
	var ended bool
	for _, p := range e.ProgressReports() {
		ended = ended || (p.Kind == "end" && strings.HasPrefix(p.Message, "no change"))
	}
	if !ended {
		t.Errorf("progress did not end saying there is no change: %+v", e.ProgressReports())
	}
}

// clampChange adds a function no test reaches, with several mutants on
// one line.
const clampChange = "\n// Clamp keeps n within 0..100.\nfunc Clamp(n int) int {\n\tif n < 0 || n > 100 {\n\t\treturn 0\n\t}\n\treturn n\n}\n"

func infoOnLine(ds []lsp.Diagnostic, line uint32) int {
	n := 0
	for _, d := range ds {
		if d.Severity == lsp.SeverityInformation && d.Range.Start.Line == line {
			n++
		}
	}
	return n
}

// TestNotCoveredSetting: uncovered mutants are one Information marker per
// line by default; bcode.notCovered "each" (sent in
// workspace/didChangeConfiguration) shows every one and "off" none; a bad
// value is refused with a message naming the setting and changes nothing;
// initializationOptions set it at start.
func TestNotCoveredSetting(t *testing.T) {
	needGo(t)
	dir := fake.Repo(t, fixture(t, "boundary.txtar"))
	src := "package price\n\n// Discount returns the discount in percent for a basket of n items.\nfunc Discount(n int) int {\n\tif n >= 10 {\n\t\treturn 5\n\t}\n\treturn 0\n}\n"
	write(t, dir, "price/price.go", []byte(src+clampChange))
	const file, clampLine = "price/price.go", 12 // `if n < 0 || n > 100 {`, 0-based
	e, ctx := connectOpen(t, dir, fake.Config{})
	ds, err := e.AwaitDiagnostics(ctx, file, "the uncovered line", func(ds []lsp.Diagnostic) bool { return infoOnLine(ds, clampLine) > 0 })
	if err != nil {
		t.Fatalf("%v; messages %q", err, e.Messages())
	}
	if n := infoOnLine(ds, clampLine); n != 1 {
		t.Fatalf("%d Information markers on the uncovered line, want 1: %+v", n, ds)
	}
	var folded string
	for _, d := range ds {
		if d.Range.Start.Line == clampLine {
			folded = d.Message
		}
	}
	if !strings.Contains(folded, "mutants not covered: no test reaches this line (") {
		t.Errorf("the line's marker does not say how many mutants: %q", folded)
	}
	configure := func(v string) {
		t.Helper()
		if err := e.Conn.Notify(ctx, "workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"bcode": map[string]any{"notCovered": v}}}); err != nil {
			t.Fatal(err)
		}
	}
	configure("each")
	ds, err = e.AwaitDiagnostics(ctx, file, "one marker per mutant", func(ds []lsp.Diagnostic) bool { return infoOnLine(ds, clampLine) > 1 })
	if err != nil {
		t.Fatal(err)
	}
	each := infoOnLine(ds, clampLine)
	configure("off")
	if _, err := e.AwaitDiagnostics(ctx, file, "no uncovered markers", func(ds []lsp.Diagnostic) bool { return infoOnLine(ds, clampLine) == 0 && len(warnings(ds)) == 0 }); err != nil {
		t.Fatal(err)
	}
	configure("sometimes")
	if err := e.Await(ctx, "the refusal", func() bool {
		for _, m := range e.MessagesLocked() {
			if strings.Contains(m, `setting bcode.notCovered must be "line", "each" or "off", not "sometimes"`) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v: %q", err, e.Messages())
	}
	if n := infoOnLine(e.Diagnostics(file), clampLine); n != 0 {
		t.Errorf("a refused value changed the markers: %d", n)
	}
	t.Logf("uncovered markers on one line: line %d, each %d, off 0", 1, each)

	// The same through initializationOptions, flat, at start.
	e2, ctx2 := connectOpen(t, dir, fake.Config{InitializationOptions: map[string]any{"notCovered": "each"}})
	if _, err := e2.AwaitDiagnostics(ctx2, file, "every uncovered mutant from the start", func(ds []lsp.Diagnostic) bool { return infoOnLine(ds, clampLine) == each }); err != nil {
		t.Fatal(err)
	}
	e3, ctx3 := connectOpen(t, dir, fake.Config{InitializationOptions: map[string]any{"bcode": map[string]any{"notCoverd": "off"}}})
	if err := e3.Await(ctx3, "the unknown setting named", func() bool {
		for _, m := range e3.MessagesLocked() {
			if strings.Contains(m, "unknown setting bcode.notCoverd") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v: %q", err, e3.Messages())
	}
}

// TestMutantActionsNameTheirMutant: with several survivors on one line each
// action says which mutant it is for; "Ignore this mutant" inserts the
// directive, indented, above the line, without a reason (the user writes
// it: a bare directive suppresses nothing); "Add a test" starts the task.
func TestMutantActionsNameTheirMutant(t *testing.T) {
	needGo(t)
	e, ctx, w := boundarySurvivors(t)
	const file = "price/price.go"
	as, err := e.CodeActions(ctx, file, w[0].Range, w)
	if err != nil {
		t.Fatal(err)
	}
	as = allQuickFixes(t, ctx, e, as)
	seen := map[string]bool{}
	var ignore *lsp.CodeAction
	for i, a := range as {
		if seen[a.Title] {
			t.Errorf("two actions titled %q", a.Title)
		}
		seen[a.Title] = true
		if strings.HasPrefix(a.Title, command.TitleShowMutant) && !strings.Contains(a.Title, "→") {
			t.Errorf("%q does not say which mutant", a.Title)
		}
		if strings.HasPrefix(a.Title, command.TitleAddTest) {
			var args command.TaskCreateArgs
			if err := json.Unmarshal(a.Command.Arguments[0], &args); err != nil || !args.Run {
				t.Errorf("%q: the task must start (run: true), got %+v (%v)", a.Title, args, err)
			}
		}
		if strings.HasPrefix(a.Title, command.TitleIgnoreMutant) && ignore == nil {
			ignore = &as[i]
		}
	}
	if ignore == nil || ignore.Edit == nil {
		t.Fatalf("no ignore action with an edit among %q", titlesOf(as))
	}
	edits := ignore.Edit.Changes[e.URI(file)]
	if len(edits) != 1 || edits[0].NewText != "\t//bcode:ignore-mutant \n" || edits[0].Range.Start.Line != 4 || edits[0].Range.Start.Character != 0 {
		t.Errorf("ignore edit %+v", ignore.Edit.Changes)
	}
}

// allQuickFixes replaces each "Show all surviving mutants on this line"
// entry among as by every action it lists, as a client's picker shows them.
func allQuickFixes(t *testing.T, ctx context.Context, e *fake.Editor, as []lsp.CodeAction) []lsp.CodeAction {
	t.Helper()
	var others, listed []lsp.CodeAction
	capped := false
	for _, a := range as {
		if a.Kind != lsp.KindQuickFix {
			others = append(others, a)
			continue
		}
		if a.Command == nil || a.Command.Command != command.MutantActions {
			continue
		}
		capped = true
		var line command.LineMutants
		if err := e.Execute(ctx, *a.Command, &line); err != nil {
			t.Fatalf("%s: %v", a.Title, err)
		}
		for _, m := range line.Mutants {
			listed = append(listed, m.Actions...)
		}
	}
	if !capped {
		return as
	}
	// The line's own first actions are in its list too: keep the list's.
	return append(listed, others...)
}

// TestQuickFixesCappedPerLine: a line with several surviving mutants
// offers at most three quick fixes: the first mutant's diff and test, and
// one entry that lists every mutant of the line with all its actions.
func TestQuickFixesCappedPerLine(t *testing.T) {
	needGo(t)
	e, ctx, w := boundarySurvivors(t)
	const file = "price/price.go"
	if len(w) < 2 {
		t.Fatalf("the fixture has %d survivors on the line, want several", len(w))
	}
	as, err := e.CodeActions(ctx, file, w[0].Range, w)
	if err != nil {
		t.Fatal(err)
	}
	var fixes []lsp.CodeAction
	for _, a := range as {
		if a.Kind == lsp.KindQuickFix {
			fixes = append(fixes, a)
		}
	}
	if len(fixes) != 3 || !strings.HasPrefix(fixes[0].Title, command.TitleShowMutant) || !strings.HasPrefix(fixes[1].Title, command.TitleAddTest) ||
		!strings.HasPrefix(fixes[2].Title, command.TitleShowAllMutants) {
		t.Fatalf("quick fixes %q, want the diff, the test and the show-all entry", titlesOf(fixes))
	}
	var line command.LineMutants
	if err := e.Execute(ctx, *fixes[2].Command, &line); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range line.Mutants {
		n += len(m.Actions)
		if len(m.Actions) < 2 || !strings.HasPrefix(m.Actions[0].Title, command.TitleShowMutant) || !strings.Contains(m.Actions[0].Title, m.Rewrite) {
			t.Errorf("mutant %s: actions %q", m.ID, titlesOf(m.Actions))
		}
	}
	if line.Line != w[0].Range.Start.Line || len(line.Mutants) != len(w) {
		t.Errorf("the list names line %d with %d mutants, want line %d with %d", line.Line, len(line.Mutants), w[0].Range.Start.Line, len(w))
	}
	if want := fmt.Sprintf("(%d mutants, %d actions)", len(line.Mutants), n); !strings.HasSuffix(fixes[2].Title, want) {
		t.Errorf("entry %q does not say %s", fixes[2].Title, want)
	}
	// A line without survivors is an error that says what to do.
	var none command.LineMutants
	err = e.Execute(ctx, command.New("", command.MutantActions, command.MutantActionsArgs{URI: e.URI(file), Line: 0}), &none)
	if err == nil || !strings.Contains(err.Error(), "no surviving mutant on line 1") {
		t.Errorf("line 1: %v, want no surviving mutant", err)
	}
}

// boundarySurvivors makes the boundary fixture's comparison stricter in the
// editor, saves, and returns the surviving mutants' diagnostics.
func boundarySurvivors(t *testing.T) (*fake.Editor, context.Context, []lsp.Diagnostic) {
	t.Helper()
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	const file = "price/price.go"
	if err := e.Open(ctx, file); err != nil {
		t.Fatal(err)
	}
	if err := e.Edit(ctx, file, "if n >= 10 {", "if n > 10 {"); err != nil {
		t.Fatal(err)
	}
	if err := e.Save(ctx, file); err != nil {
		t.Fatal(err)
	}
	ds, err := e.AwaitDiagnostics(ctx, file, "a survivor", func(ds []lsp.Diagnostic) bool { return len(warnings(ds)) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	return e, ctx, warnings(ds)
}

func titlesOf(as []lsp.CodeAction) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Title)
	}
	return out
}

// TestCoveringTestActions: on a survivor, "Go to covering test TestX"
// shows TestX's declaration with its name selected, and "Run the covering
// tests" runs them in the workspace and says they pass (the mutant
// survives them: that is the point).
func TestCoveringTestActions(t *testing.T) {
	needGo(t)
	e, ctx, w := boundarySurvivors(t)
	const file = "price/price.go"
	as, err := e.CodeActions(ctx, file, w[0].Range, w[:1])
	if err != nil {
		t.Fatal(err)
	}
	as = allQuickFixes(t, ctx, e, as)
	var goTo, run *lsp.CodeAction
	for i, a := range as {
		switch {
		case strings.HasPrefix(a.Title, command.TitleGoToTest):
			goTo = &as[i]
		case strings.HasPrefix(a.Title, command.TitleRunTests):
			run = &as[i]
		}
	}
	if goTo == nil || run == nil {
		t.Fatalf("no go-to or run action among %q", titlesOf(as))
	}
	if goTo.Title != command.TitleGoToTest+" TestDiscount" {
		t.Errorf("go-to title %q", goTo.Title)
	}
	var doc command.DocumentResult
	if err := e.Execute(ctx, *goTo.Command, &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Shown || !strings.HasSuffix(doc.URI, "/price/price_test.go") {
		t.Errorf("go-to result %+v", doc)
	}
	var res command.TestRunResult
	if err := e.Execute(ctx, *run.Command, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Passed || len(res.Tests) == 0 || !strings.Contains(res.Output, "ok") {
		t.Errorf("run result %+v", res)
	}
	var said bool
	for _, m := range e.Messages() {
		said = said || strings.HasSuffix(m, ": pass")
	}
	if !said {
		t.Errorf("no message with the outcome: %q", e.Messages())
	}
}
