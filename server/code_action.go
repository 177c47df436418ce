package server

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify"
)

// CodeAction offers, each through a typed command: on a selection, "Create
// task from selection"; on a surviving-mutant diagnostic, "Show mutant
// diff", "Add a test for this boundary" and the mutant's other quick fixes,
// at most three per line (see mutantActions); anywhere, "Preview context
// pack", "Resume task" (when a task can be resumed) and "Run evidence now".
func (s *Server) CodeAction(ctx context.Context, p *lsp.CodeActionParams) ([]lsp.CodeAction, error) {
	abs, rel, err := s.fileOf(p.URI)
	if err != nil {
		return nil, err
	}
	acts := codeActions{only: p.Only}
	if !p.Range.Empty() {
		acts.add(lsp.KindRefactor, nil, s.createTaskCommand(abs, rel, p))
	}
	s.mutantActions(&acts, abs, p)
	s.reproduceAction(&acts, abs, rel, p)
	r := p.Range
	acts.add(lsp.KindSource, nil, command.New(command.TitlePreviewPack, command.PackPreview, command.PackArgs{URI: p.URI, Range: &r}))
	if id := s.resumable(ctx); id != "" {
		acts.add(lsp.KindSource, nil, command.New(command.TitleResumeTask+" "+id, command.TaskResume, command.TaskIDArgs{ID: id}))
	}
	acts.add(lsp.KindSource, nil, command.New(command.TitleRunEvidence, command.EvidenceRun, command.EvidenceRunArgs{}))
	return acts.out, nil
}

// codeActions collects the actions of one request, keeping the kinds the
// client asked for (p.Only).
type codeActions struct {
	only []string
	out  []lsp.CodeAction
}

func (a *codeActions) add(kind string, diags []lsp.Diagnostic, c lsp.Command) {
	if kindWanted(kind, a.only) {
		a.out = append(a.out, lsp.CodeAction{Title: c.Title, Kind: kind, Diagnostics: diags, Command: &c})
	}
}

// createTaskCommand is "Create task from selection": the client asks the
// user for the goal (Ask), offering one that names the selected lines and
// the first of them, and the task starts at once (Run).
func (s *Server) createTaskCommand(abs, rel string, p *lsp.CodeActionParams) lsp.Command {
	text, _ := s.text(abs)
	r := p.Range
	goal := fmt.Sprintf("Change %s lines %d-%d", rel, r.Start.Line+1, endLine(r))
	if first := firstLine(text, r); first != "" {
		goal += ": " + first
	}
	return command.New(command.TitleCreateTask, command.TaskCreate, command.TaskCreateArgs{Goal: goal, URI: p.URI, Range: &r, Run: true, Ask: true})
}

// maxQuickFixesPerLine caps the quick fixes a line offers: past it the
// line offers its best two and one "Show all surviving mutants on this
// line" entry (bcode.mutant.actions), so a line with several mutants and
// tests never floods the lightbulb menu.
const maxQuickFixesPerLine = 3

// mutantActions adds the quick fixes of the surviving mutants under p's
// range, line by line: all of a line's actions when they are at most
// maxQuickFixesPerLine, else the first mutant's "Show mutant diff" and
// "Add a test for this boundary" and one entry that lists them all.
func (s *Server) mutantActions(acts *codeActions, abs string, p *lsp.CodeActionParams) {
	if !kindWanted(lsp.KindQuickFix, acts.only) {
		return
	}
	for _, line := range s.lineActions(abs, p) {
		n := 0
		for _, m := range line.Mutants {
			n += len(m.Actions)
		}
		if n <= maxQuickFixesPerLine {
			for _, m := range line.Mutants {
				acts.out = append(acts.out, m.Actions...)
			}
			continue
		}
		acts.out = append(acts.out, line.Mutants[0].Actions[:2]...)
		title := fmt.Sprintf("%s (%d mutants, %d actions)", command.TitleShowAllMutants, len(line.Mutants), n)
		if len(line.Mutants) == 1 {
			title = fmt.Sprintf("%s (%d actions)", command.TitleShowAllMutants, n)
		}
		c := command.New(title, command.MutantActions, command.MutantActionsArgs{URI: p.URI, Line: line.Line})
		acts.out = append(acts.out, lsp.CodeAction{Title: c.Title, Kind: lsp.KindQuickFix, Diagnostics: line.Mutants[0].Actions[0].Diagnostics, Command: &c})
	}
}

// lineActions are every action of each surviving mutant under p's range,
// grouped by the line the mutant's diagnostic starts on, in the order the
// survivors come.
func (s *Server) lineActions(abs string, p *lsp.CodeActionParams) []command.LineMutants {
	goTo := map[string]bool{}           // one "Go to covering test" per test, however many mutants it covers
	var own map[string][]lsp.Diagnostic // the server's own diagnostics, made once per request
	var lines []command.LineMutants
	at := map[uint32]int{} // line → index in lines
	for _, sv := range s.survivorsAt(p) {
		if own == nil {
			own = s.ownDiagnostics()
		}
		line := sv.diag.Range.Start.Line
		i, ok := at[line]
		if !ok {
			i = len(lines)
			at[line] = i
			lines = append(lines, command.LineMutants{URI: p.URI, Line: line})
		}
		lines[i].Mutants = append(lines[i].Mutants, command.MutantActionList{
			ID:      sv.mutant.ID,
			Rewrite: sv.mutant.Rewrite(),
			Actions: s.survivorActions(abs, p.URI, sv, coveringTests(own[p.URI], sv.mutant.ID, sv.data), goTo),
		})
	}
	return lines
}

// survivorActions are one surviving mutant's quick fixes: show its diff,
// add a test that kills it, go to or run the tests that ran against it,
// and ignore it. The first two always come first: they are the line's
// best when it offers only a few.
func (s *Server) survivorActions(abs, uri string, at survivorAt, tests []CoveringTest, goTo map[string]bool) []lsp.CodeAction {
	d, m := at.diag, at.mutant
	var out []lsp.CodeAction
	add := func(diags []lsp.Diagnostic, c lsp.Command) {
		out = append(out, lsp.CodeAction{Title: c.Title, Kind: lsp.KindQuickFix, Diagnostics: diags, Command: &c})
	}
	// Several mutants can sit on one line: each action names its own.
	which := ": " + m.Rewrite()
	add([]lsp.Diagnostic{d}, command.New(command.TitleShowMutant+which, command.MutantDiff, command.MutantArgs{ID: m.ID}))
	r := d.Range
	// The task starts at once: a click that only queued a task looked
	// like nothing happened.
	add([]lsp.Diagnostic{d}, command.New(command.TitleAddTest+which, command.TaskCreate, command.TaskCreateArgs{
		Goal:     testGoal(m),
		URI:      uri,
		Range:    &r,
		MutantID: m.ID,
		Criteria: []string{fmt.Sprintf("bcode evidence reports mutant %s as killed", m.ID)},
		Run:      true,
	}))
	// The tests that ran against it: go to each, or run them.
	for _, t := range tests {
		if t.Location == nil {
			continue // bcode-ls did not find its declaration
		}
		loc := *t.Location
		if title := command.TitleGoToTest + " " + t.Name; !goTo[title] {
			goTo[title] = true
			add(nil, command.New(title, command.TestOpen, command.TestOpenArgs{URI: loc.URI, Range: &loc.Range}))
		}
	}
	if len(m.Tests) > 0 {
		add(nil, command.New(command.TitleRunTests+which, command.TestRun, command.MutantArgs{ID: m.ID}))
	}
	if edit, ok := s.ignoreEdit(abs, uri, d.Range.Start.Line); ok {
		out = append(out, lsp.CodeAction{Title: command.TitleIgnoreMutant + which, Kind: lsp.KindQuickFix, Diagnostics: []lsp.Diagnostic{d}, Edit: edit})
	}
	return out
}

// MutantActions lists every quick fix of the surviving mutants on one
// line: the "Show all surviving mutants on this line" entry. A client
// shows them as a picker; one that does not know the entry can ignore it.
func (s *Server) MutantActions(ctx context.Context, a command.MutantActionsArgs) (command.LineMutants, error) {
	abs, _, err := s.fileOf(a.URI)
	if err != nil {
		return command.LineMutants{}, err
	}
	// The whole line; survivorsAt keeps the diagnostics touching it, and
	// only those starting on it are the line's.
	p := &lsp.CodeActionParams{URI: a.URI, Range: lsp.Range{Start: lsp.Position{Line: a.Line}, End: lsp.Position{Line: a.Line, Character: math.MaxUint32}}}
	for _, l := range s.lineActions(abs, p) {
		if l.Line == a.Line {
			return l, nil
		}
	}
	return command.LineMutants{}, lsp.Errorf(lsp.CodeInvalidParams, "no surviving mutant on line %d of %s in the last evidence report: run evidence again (bcode.evidence.run)", a.Line+1, a.URI)
}

// ownDiagnostics are the diagnostics the server makes from its last
// report, by URI (a client may send back an older diagnostic of the same
// mutant).
func (s *Server) ownDiagnostics() map[string][]lsp.Diagnostic {
	root, err := s.workspace()
	if err != nil {
		return map[string][]lsp.Diagnostic{}
	}
	s.ev.mu.Lock()
	rep := s.ev.last
	s.ev.mu.Unlock()
	return s.diagnosticsOf(root, &rep)
}

// coveringTests are mutant id's covering tests from the data of the
// server's own diagnostic for it (the last report's), else from the data
// the client sent.
func coveringTests(own []lsp.Diagnostic, id string, sent MutantData) []CoveringTest {
	for _, d := range own {
		if md, ok := mutantData(d); ok && md.ID == id {
			return md.Tests
		}
	}
	return sent.Tests
}

// ignoreEdit inserts a //bcode:ignore-mutant directive on its own line
// above line (0-based), indented like it. The reason is left for the user
// to write: a directive without one suppresses nothing and the next run
// says so, so a click can never silence a mutant by itself.
func (s *Server) ignoreEdit(abs, uri string, line uint32) (*lsp.WorkspaceEdit, bool) {
	if filepath.Ext(abs) != ".go" {
		// Only the Go engine reads the directive (verify/mutate/golang):
		// in a .ts or .rs file it would suppress nothing, and in Python
		// it is not even a comment.
		return nil, false
	}
	text, err := s.text(abs)
	if err != nil {
		return nil, false
	}
	l, ok := lineAt(text, int(line))
	if !ok {
		return nil, false
	}
	indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
	at := lsp.Position{Line: line, Character: 0}
	return &lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{
		uri: {{Range: lsp.Range{Start: at, End: at}, NewText: indent + ignoreDirective + " \n"}},
	}}, true
}

// ignoreDirective is verify/mutate's suppression comment.
const ignoreDirective = "//bcode:ignore-mutant"

// testGoal is the goal of a task that must kill a surviving mutant: it names
// the mutant so the agent (and the user reading the task list) know which.
func testGoal(m verify.Mutant) string {
	return fmt.Sprintf("Add a test that fails when %s:%d reads `%s` instead of `%s` (surviving %s mutant %s)",
		m.File, m.Line, oneLine(m.Mutated), oneLine(m.Original), m.Operator, m.ID)
}

type survivorAt struct {
	mutant verify.Mutant
	diag   lsp.Diagnostic
	data   MutantData
}

// survivorsAt are the surviving mutants whose diagnostics the client sent
// with the request (by their data), or, for clients that send none, whose
// current diagnostic touches the range.
func (s *Server) survivorsAt(p *lsp.CodeActionParams) []survivorAt {
	s.ev.mu.Lock()
	rep := s.ev.last
	s.ev.mu.Unlock()
	byID := map[string]verify.Mutant{}
	for _, m := range rep.Mutants {
		if m.Verdict == verify.MutantSurvived {
			byID[m.ID] = m
		}
	}
	var out []survivorAt
	seen := map[string]bool{}
	for _, d := range p.Diagnostics {
		md, ok := mutantData(d)
		if !ok {
			continue
		}
		if m, ok := byID[md.ID]; ok && !seen[md.ID] {
			seen[md.ID] = true
			out = append(out, survivorAt{m, d, md})
		}
	}
	if len(p.Diagnostics) > 0 {
		return out
	}
	root, err := s.workspace()
	if err != nil {
		return nil
	}
	for _, d := range s.diagnosticsOf(root, &rep)[p.URI] {
		md, ok := mutantData(d)
		if !ok || seen[md.ID] {
			continue
		}
		if m, ok := byID[md.ID]; ok && touches(d.Range, p.Range) {
			seen[md.ID] = true
			out = append(out, survivorAt{m, d, md})
		}
	}
	return out
}

// touches reports whether a and b overlap or meet.
func touches(a, b lsp.Range) bool {
	return !before(a.End, b.Start) && !before(b.End, a.Start)
}

func before(p, q lsp.Position) bool {
	return p.Line < q.Line || (p.Line == q.Line && p.Character < q.Character)
}

// kindWanted applies the client's "only" filter (prefix match, as LSP says).
func kindWanted(kind string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if kind == o || strings.HasPrefix(kind, o+".") {
			return true
		}
	}
	return false
}

// endLine is the last 1-based line a range covers (a range ending at the
// start of a line does not cover that line).
func endLine(r lsp.Range) uint32 {
	if r.End.Character == 0 && r.End.Line > r.Start.Line {
		return r.End.Line
	}
	return r.End.Line + 1
}

func firstLine(text string, r lsp.Range) string {
	from, to := offsetOf(text, r.Start), offsetOf(text, r.End)
	if from >= to {
		return ""
	}
	sel := strings.TrimSpace(text[from:to])
	if i := strings.IndexByte(sel, '\n'); i >= 0 {
		sel = sel[:i]
	}
	sel = oneLine(sel)
	if len(sel) > 60 {
		sel = sel[:60] + "…"
	}
	return sel
}
