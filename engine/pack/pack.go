// Package pack builds context packs: the smallest context that still holds
// what a change needs. A pack is ordered sections (the selection and its
// enclosing declaration, the repository's rules, a resumed task's history,
// the bodies of the functions most likely to change with the selection,
// the types it uses, the next ring's signatures, and a repo map ranked by
// personalised PageRank), each with the reason it is there and its token
// count, fitted to a budget it never exceeds. Functions are ranked by the
// call graph, the tests that reach the selection, the types it uses and
// what changed with it in the repository's own history (funcrank.go has
// the weights). Go is indexed by engine/codegraph's go/packages index,
// Python by Python's own ast into the same graph. The same inputs give the
// same bytes; every repository read goes through sandbox.Confined, git
// through sandbox/git; secrets are redacted before anything is counted.
package pack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/codegraph/cochange"
	"github.com/bcode-dev/bcode/sandbox"
)

// DefaultBudget is the token budget when Input.Budget is zero.
const DefaultBudget = 8000

// MinBudget is the smallest budget a pack can be built for: below it not
// even the header and a selection fit.
const MinBudget = 200

// Redactor removes secrets from text, returning the text and how many it
// removed; *secrets.Scanner is one.
type Redactor interface {
	Redact(text string) (string, int)
}

// Input is what a pack is built from.
type Input struct {
	Repo      string            // the worktree (a directory)
	Goal      string            // what the change is for, in words
	Selection *engine.Selection // optional: its location is used, not its recorded text
	TaskID    string            // optional: a task whose history to include
	Budget    int               // tokens; 0 means DefaultBudget

	// Graph is a warm index (bcode-ls keeps one for Go; for Python,
	// codegraph.IndexPython's); nil indexes Repo now, reusing Store when
	// given.
	Graph *codegraph.Graph
	Store codegraph.Store
	// IndexProgress, when set, hears of each package the Go index
	// indexes (bcode-ls reports it as $/progress).
	IndexProgress func(done, total int, dir string)
	// IndexBudget, when positive, bounds checking and indexing the Go
	// packages (instead of the deadline derived from the last load and
	// the machine's load): what is not indexed by then is left out of
	// this pack, with a note saying so, and indexed by a later one.
	IndexBudget time.Duration
	// Tasks reads a task's history; nil leaves that section out with a note.
	Tasks TaskHistory
	// Counter counts tokens; nil uses the calibrated estimate.
	Counter Counter
	// Redactor removes secrets; required (Build refuses to run without
	// one, so no caller can forget it).
	Redactor Redactor
	// Notes are the caller's own notes to carry in the pack (e.g. which
	// tokenizer it picked and why); they count against the budget.
	Notes []string
	// LanguageServers are the commands tried, in order, for the
	// selection's language when a language server packs it (Python
	// without its ast index, JavaScript, TypeScript, Rust): nil means that
	// language's Default…Servers.
	LanguageServers [][]string
}

// Section is one part of a pack.
type Section struct {
	Title  string   `json:"title"`
	Reason string   `json:"reason"`
	Tokens int      `json:"tokens"`
	Files  []string `json:"files"`
	// Symbols are the functions and types the section shows, each as a
	// body or a signature, in order.
	Symbols []Shown `json:"symbols,omitempty"`
	Text    string  `json:"text"`

	parts     []string  // the entries Text is made of, for trimming
	partShown [][]Shown // the symbols of each part
}

// Forms a symbol is shown in.
const (
	FormBody      = "body"
	FormSignature = "signature"
)

// Shown is one symbol a section shows.
type Shown struct {
	File string `json:"file"`
	Name string `json:"name"`
	Line int    `json:"line"`
	Form string `json:"form"` // FormBody or FormSignature
}

// Shown returns every symbol the pack shows, in section order; a symbol
// shown twice is listed twice.
func (p *Pack) Shown() []Shown {
	var out []Shown
	for _, s := range p.Sections {
		out = append(out, s.Symbols...)
	}
	return out
}

// Pack is a built context pack.
type Pack struct {
	Goal      string            `json:"goal,omitempty"`
	Selection *engine.Selection `json:"selection,omitempty"` // the location only
	Sections  []Section         `json:"sections"`
	Total     int               `json:"total"` // tokens of Render(p), counted by Counter
	Budget    int               `json:"budget"`
	Counter   string            `json:"counter"`
	Cut       []string          `json:"cut,omitempty"`   // what was cut, and why
	Notes     []string          `json:"notes,omitempty"` // how it was built
	// Index statistics and build time are kept out of the JSON so the
	// same inputs give byte-identical output.
	IndexStats *codegraph.Stats `json:"-"`
	BuildTime  time.Duration    `json:"-"`
	// Ranking is every function the ranker found any signal for, best
	// first, shown or not: for measuring why a function is missing (the
	// benchmark's --explain), kept out of the JSON.
	Ranking []Ranked `json:"-"`
}

// Ranked is one function of the ranking with its score.
type Ranked struct {
	File  string
	Name  string
	Line  int
	Score float64
	Why   string // the signals, short form
	Test  bool
	// Features are the values the score weighs, named by FeatureNames.
	Features []float64
}

// Files returns every file any section shows, sorted and unique.
func (p *Pack) Files() []string {
	set := map[string]bool{}
	for _, s := range p.Sections {
		for _, f := range s.Files {
			set[f] = true
		}
	}
	return sortedSet(set)
}

// Errors a caller can tell apart.
var (
	ErrBadSelection = errors.New("bad selection")
	ErrNotDir       = errors.New("not a directory")
)

// Build builds the pack for in.
func Build(ctx context.Context, in Input) (*Pack, error) {
	start := time.Now()
	// Cancelled on return: stops a history read the pack did not use.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if in.Redactor == nil {
		return nil, errors.New("pack: no secret redactor given")
	}
	if in.Budget == 0 {
		in.Budget = DefaultBudget
	}
	if in.Budget < MinBudget {
		return nil, fmt.Errorf("budget %d is below the minimum of %d tokens", in.Budget, MinBudget)
	}
	if in.Counter == nil {
		in.Counter = Estimate{}
	}
	abs, err := filepath.Abs(in.Repo)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", in.Repo, ErrNotDir)
	}
	conf, err := sandbox.OpenConfined(abs)
	if err != nil {
		return nil, err
	}
	defer conf.Close()

	b := &builder{in: in, conf: conf, src: newSources(conf, in.Redactor), notes: append([]string(nil), in.Notes...), histFiles: map[string]float64{}}
	if in.Selection != nil {
		// The location only: a task's recorded text and hash are not the
		// file's lines now (the pack shows those), and the pack's JSON is
		// the same whoever calls.
		loc := engine.Selection{File: in.Selection.File, StartLine: in.Selection.StartLine, EndLine: in.Selection.EndLine}
		sel, err := b.src.checkSelection(loc)
		if err != nil {
			return nil, err
		}
		b.sel = &sel
	}
	if err := b.collect(ctx); err != nil {
		return nil, err
	}
	p, err := b.fit(ctx)
	if err != nil {
		return nil, err
	}
	p.IndexStats = b.stats
	p.Ranking = b.ranking
	p.BuildTime = time.Since(start)
	return p, nil
}

// builder holds one Build's state.
type builder struct {
	in    Input
	conf  *sandbox.Confined
	src   *sources
	sel   *engine.Selection
	cands []candidate
	notes []string
	stats *codegraph.Stats
	// hist is the repository's mined git history (nil: none), read once.
	hist     *cochange.History
	histDone bool
	// histRead, when set, delivers the history read beside the index.
	histRead chan minedHistory
	// histFiles is each file's co-change strength with the selection's
	// (damped confidence), for the repo map's order.
	histFiles map[string]float64
	// ranking is the function ranking, for Pack.Ranking.
	ranking []Ranked
}

// collect gathers every candidate section, most important first.
func (b *builder) collect(ctx context.Context) error {
	lang := "go"
	var server *serverLanguage
	if b.sel != nil && !strings.HasSuffix(b.sel.File, ".go") {
		lang = "other"
		if server = serverLanguageOf(b.sel.File); server != nil {
			lang = "server"
		}
		if strings.HasSuffix(b.sel.File, ".py") {
			lang = "python"
		}
	}
	if lang == "go" || lang == "python" {
		b.readHistoryAhead(ctx)
	}
	var g *codegraph.Graph
	if lang == "go" {
		g = b.in.Graph
		if g == nil {
			var first string
			if b.sel != nil {
				first = b.sel.File
			}
			graph, st, err := codegraph.IndexWith(ctx, b.conf.Dir(), b.in.Store, codegraph.Options{First: first, Progress: b.in.IndexProgress, CheckDeadline: b.in.IndexBudget})
			switch {
			case errors.Is(err, codegraph.ErrNoGoModule):
				b.notes = append(b.notes, "no go.mod: Go index skipped, sections from text search")
				lang = "other"
			case err != nil:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// Not the error's text: it can carry what the go command
				// printed about the agent's code.
				b.notes = append(b.notes, "Go index failed ("+codegraph.WhyFailed(err)+"): sections from text search")
				lang = "other"
			default:
				g, b.stats = graph, &st
				if len(st.Errors) > 0 {
					// The index keeps fixed sentences, never a tool's
					// message; the first names the package and place.
					b.notes = append(b.notes, fmt.Sprintf("Go index: %d package errors (first: %s)", len(st.Errors), st.Errors[0]))
				}
				if len(st.Pending) > 0 {
					b.notes = append(b.notes, indexPendingNote(st))
				}
				if len(st.Refused) > 0 {
					b.notes = append(b.notes, fmt.Sprintf("not read (symbolic links, or over 16 MiB): %s", strings.Join(st.Refused, ", ")))
				}
			}
		}
	}
	if lang == "python" && b.in.Graph != nil {
		g = b.in.Graph // a warm Python index
	} else if lang == "python" {
		graph, st, err := codegraph.IndexPython(ctx, b.conf.Dir())
		switch {
		case err == nil:
			g, b.stats = graph, &st
			b.notes = append(b.notes, "Python indexed with Python's own ast")
			if len(st.Errors) > 0 {
				b.notes = append(b.notes, fmt.Sprintf("Python index: %d file(s) did not parse (first: %s)", len(st.Errors), st.Errors[0]))
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, codegraph.ErrNoPython):
			b.notes = append(b.notes, "no python3 for the ast index: trying a language server")
		default:
			// Not the error's text: it ran over the agent's code.
			b.notes = append(b.notes, "Python ast index failed: trying a language server")
		}
	}
	if b.sel != nil {
		b.cands = append(b.cands, b.selectionSection(g))
	}
	b.cands = append(b.cands, b.rulesSection())
	if b.in.TaskID != "" {
		b.cands = append(b.cands, b.historySection(ctx))
	}
	switch {
	case g != nil:
		b.cands = append(b.cands, b.graphSections(ctx, g)...)
	case server != nil:
		b.cands = append(b.cands, b.serverSections(ctx, server)...)
	default:
		b.cands = append(b.cands, b.textSearchSections("")...)
	}
	return nil
}
