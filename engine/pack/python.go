package pack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/codegraph/lspclient"
)

// DefaultPythonServers are the language servers tried for Python, in order.
var DefaultPythonServers = [][]string{
	{"pyright-langserver", "--stdio"},
	{"pylsp"},
}

// pythonTimeout bounds the whole language-server conversation in wall
// time, as a backstop only: lspclient abandons a server that stops working
// on an answer or spins (ErrStalled, in the server's CPU time), so a
// server that is merely slow on a busy machine still gives the same pack.
const pythonTimeout = 5 * time.Minute

// pythonSections asks a Python language server for the selection's
// enclosing function, its callers and callees (callHierarchy) and the tests
// that reference it. Without a server, or when it fails, the sections come
// from text search and a note says why: the pack never fails for it.
func (b *builder) pythonSections(ctx context.Context) []candidate {
	servers := b.in.LanguageServers
	if servers == nil {
		servers = DefaultPythonServers
	}
	ctx, cancel := context.WithTimeout(ctx, pythonTimeout)
	defer cancel()
	client, argv, err := lspclient.Start(ctx, servers, b.conf.Dir())
	if err != nil {
		why := "Python language server unavailable (" + shortErr(err) + "): install one with `npm i -g pyright` or `pip install python-lsp-server`; callers and tests found by text search instead"
		if !errors.Is(err, lspclient.ErrNoServer) {
			// Not the error's text: the server ran over the agent's code.
			why = "Python language server failed to start: callers and tests found by text search instead"
		}
		b.notes = append(b.notes, why)
		return b.textSearchSections(why)
	}
	defer client.Close()
	b.notes = append(b.notes, "Python through the language server "+filepath.Base(argv[0]))
	out, err := b.pythonGraph(ctx, client)
	if err != nil {
		why := "Python language server request failed: text search instead"
		b.notes = append(b.notes, why)
		return b.textSearchSections(why)
	}
	return out
}

func (b *builder) openPython(client *lspclient.Client, opened map[string]bool, rel string) (string, error) {
	uri := lspclient.FileURI(filepath.Join(b.conf.Dir(), filepath.FromSlash(rel)))
	if opened[rel] {
		return uri, nil
	}
	l, err := b.src.lines(rel)
	if err != nil {
		return "", err
	}
	opened[rel] = true
	return uri, client.DidOpen(uri, "python", strings.Join(l, "\n")+"\n")
}

// relOf maps a server URI back into the repository, or reports false for a
// file outside it (a library, a stub).
func (b *builder) relOf(uri string) (string, bool) {
	p, err := lspclient.URIPath(uri)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(b.conf.Dir(), p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// pythonGraph is the Python pack's sections around the selection's
// innermost function or class, from the language server: its callers and
// callees, the tests that refer to it, and text search for the rest.
func (b *builder) pythonGraph(ctx context.Context, client *lspclient.Client) ([]candidate, error) {
	opened := map[string]bool{}
	uri, err := b.openPython(client, opened, b.sel.File)
	if err != nil {
		return nil, err
	}
	syms, err := client.DocumentSymbols(ctx, uri)
	if err != nil {
		return nil, err
	}
	target := innermost(syms, b.sel.StartLine-1)
	if target == nil {
		return b.textSearchSections("the selection is outside any function or class: text search"), nil
	}
	pos := target.SelectionRange.Start
	neighbours, err := b.pyNeighbours(ctx, client, uri, pos, target.Name)
	if err != nil {
		return nil, err
	}
	tests, err := b.pyTests(ctx, client, uri, pos, target.Name)
	if err != nil {
		return nil, err
	}
	out := []candidate{neighbours, tests}
	// The rest of the repository: text search stands in for the repo map.
	more := b.textSearchSections("")
	more[0].title = "Repo map (text search)"
	return append(out, more...), nil
}

// pyCall is a function in the repository that calls the target, or that
// it calls.
type pyCall struct {
	rel      string
	from, to int
	name     string
	relation string // caller or callee
}

// pyNeighbours is the "Callers and callees" section of the target (name,
// at pos of uri): the whole definition of each (pyCalls' order).
func (b *builder) pyNeighbours(ctx context.Context, client *lspclient.Client, uri string, pos lspclient.Position, name string) (candidate, error) {
	neighbours := candidate{
		title:  "Callers and callees",
		reason: "functions that call " + name + " or that it calls, from the language server's call hierarchy",
		share:  shareNeighbour,
	}
	hits, err := b.pyCalls(ctx, client, uri, pos)
	if err != nil {
		return candidate{}, err
	}
	for _, h := range hits {
		// Servers give the name's range; show the whole def.
		if from, to, ok := b.enclosingDef(h.rel, h.from); ok && from == h.from {
			h.to = to
		}
		head := fmt.Sprintf("%s:%d-%d (%s %s)", h.rel, h.from, h.to, h.relation, h.name)
		text, err := b.src.snippet(h.rel, h.from, h.to)
		if err != nil {
			continue
		}
		first, _ := b.src.snippet(h.rel, h.from, h.from)
		neighbours.items = append(neighbours.items, item{
			label: h.rel + ":" + h.name,
			full:  head + "\n" + fence(h.rel, text),
			short: "- `" + strings.TrimSpace(first) + "` — " + head,
			files: []string{h.rel},
		})
	}
	return neighbours, nil
}

// pyCalls asks the server's call hierarchy for the calls into and out of
// the symbol at pos, keeping those in the repository, sorted (callees,
// then callers; by file and line) and each function once.
func (b *builder) pyCalls(ctx context.Context, client *lspclient.Client, uri string, pos lspclient.Position) ([]pyCall, error) {
	items, err := client.PrepareCallHierarchy(ctx, uri, pos)
	if err != nil {
		return nil, err
	}
	var hits []pyCall
	for _, it := range items {
		in, err := client.IncomingCalls(ctx, it)
		if err != nil {
			return nil, err
		}
		for _, c := range in {
			if rel, ok := b.relOf(c.From.URI); ok {
				hits = append(hits, pyCall{rel, c.From.Range.Start.Line + 1, c.From.Range.End.Line + 1, c.From.Name, "caller"})
			}
		}
		outc, err := client.OutgoingCalls(ctx, it)
		if err != nil {
			return nil, err
		}
		for _, c := range outc {
			if rel, ok := b.relOf(c.To.URI); ok {
				hits = append(hits, pyCall{rel, c.To.Range.Start.Line + 1, c.To.Range.End.Line + 1, c.To.Name, "callee"})
			}
		}
	}
	slices.SortFunc(hits, func(a, c pyCall) int {
		return cmp.Or(cmp.Compare(a.relation, c.relation), cmp.Compare(a.rel, c.rel), cmp.Compare(a.from, c.from))
	})
	return slices.CompactFunc(hits, func(a, c pyCall) bool { return a.rel == c.rel && a.from == c.from }), nil
}

// pyTests is the "Tests that reach the selection" section: each test
// function (in a test file) holding a reference to the target, once.
func (b *builder) pyTests(ctx context.Context, client *lspclient.Client, uri string, pos lspclient.Position, name string) (candidate, error) {
	tests := candidate{
		title:  "Tests that reach the selection",
		reason: "test functions that refer to " + name + " (language server references in test files)",
		share:  shareTests,
	}
	refs, err := client.References(ctx, uri, pos, false)
	if err != nil {
		return candidate{}, err
	}
	seen := map[string]bool{}
	for _, r := range refs {
		rel, ok := b.relOf(r.URI)
		if !ok || !isPythonTest(rel) {
			continue
		}
		from, to, ok := b.enclosingDef(rel, r.Range.Start.Line+1)
		if !ok {
			continue // an import or module-level use, not a test
		}
		key := fmt.Sprintf("%s:%d", rel, from)
		if seen[key] {
			continue
		}
		seen[key] = true
		text, err := b.src.snippet(rel, from, to)
		if err != nil {
			continue
		}
		first, _ := b.src.snippet(rel, from, from)
		tests.items = append(tests.items, item{
			label: key,
			full:  fmt.Sprintf("%s:%d-%d\n", rel, from, to) + fence(rel, text),
			short: fmt.Sprintf("- `%s` — %s:%d", strings.TrimSpace(first), rel, from),
			files: []string{rel},
		})
	}
	slices.SortStableFunc(tests.items, func(a, c item) int { return cmp.Compare(a.label, c.label) })
	if len(tests.items) == 0 {
		tests.note = "no test file refers to " + name
	}
	return tests, nil
}

// innermost returns the deepest symbol whose range holds line (0-based).
func innermost(syms []lspclient.DocumentSymbol, line int) *lspclient.DocumentSymbol {
	for i := range syms {
		s := &syms[i]
		if s.Range.Start.Line <= line && line <= s.Range.End.Line {
			if in := innermost(s.Children, line); in != nil {
				return in
			}
			return s
		}
	}
	return nil
}

func isPythonTest(rel string) bool {
	base := path.Base(rel)
	return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || strings.Contains("/"+rel, "/tests/")
}

// enclosingDef finds the `def` a line belongs to by indentation: the
// nearest def at or above it, to the last line indented deeper. ok is false
// when no def encloses the line.
func (b *builder) enclosingDef(rel string, line int) (from, to int, ok bool) {
	l, err := b.src.lines(rel)
	if err != nil || line < 1 || line > len(l) {
		return line, line, false
	}
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }
	from = 0
	for i := line; i >= 1; i-- {
		t := strings.TrimSpace(l[i-1])
		if strings.HasPrefix(t, "def ") || strings.HasPrefix(t, "async def ") {
			from = i
			break
		}
	}
	if from == 0 {
		return line, line, false
	}
	to = from
	base := indent(l[from-1])
	for i := from + 1; i <= len(l); i++ {
		if strings.TrimSpace(l[i-1]) == "" {
			continue
		}
		if indent(l[i-1]) <= base {
			break
		}
		to = i
	}
	if line > to {
		return line, line, false // the def above ended before this line
	}
	return from, to, true
}
