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

// DefaultTypeScriptServers are the language servers tried for JavaScript
// and TypeScript: the TypeScript compiler's own, which reads plain
// JavaScript too.
var DefaultTypeScriptServers = [][]string{{"typescript-language-server", "--stdio"}}

// DefaultRustServers are the language servers tried for Rust.
var DefaultRustServers = [][]string{{"rust-analyzer"}}

// serverLanguage is a language whose pack sections come from a language
// server: which files are its own, the servers to try, how a test file is
// named, and how to install a server.
type serverLanguage struct {
	name    string
	exts    map[string]string // extension -> the LSP languageId of its files
	servers [][]string
	isTest  func(rel string) bool
	install string
}

// serverLanguages are the languages packed through a language server.
// Python comes first to its ast index (codegraph.IndexPython) and here
// only without one; the others always.
var serverLanguages = []*serverLanguage{
	{name: "Python", exts: map[string]string{".py": "python"}, servers: DefaultPythonServers, isTest: isPythonTest,
		install: "`npm i -g pyright` or `pip install python-lsp-server`"},
	{name: "JavaScript/TypeScript", exts: map[string]string{
		".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
		".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
	}, servers: DefaultTypeScriptServers, isTest: isJSTest, install: "`npm i -g typescript-language-server typescript`"},
	{name: "Rust", exts: map[string]string{".rs": "rust"}, servers: DefaultRustServers, isTest: isRustTest,
		install: "`rustup component add rust-analyzer`"},
}

// serverLanguageOf is the language of the file at rel, or nil.
func serverLanguageOf(rel string) *serverLanguage {
	for _, l := range serverLanguages {
		if _, ok := l.exts[path.Ext(rel)]; ok {
			return l
		}
	}
	return nil
}

// serverTimeout bounds the whole language-server conversation in wall
// time, as a backstop only: lspclient abandons a server that stops working
// on an answer or spins (ErrStalled, in the server's CPU time), so a
// server that is merely slow on a busy machine still gives the same pack.
const serverTimeout = 5 * time.Minute

// serverSections asks the selection's language server for its enclosing
// function, its callers and callees (callHierarchy) and the tests that
// reference it. Without a server, or when it fails, the sections come from
// text search and a note says why: the pack never fails for it.
func (b *builder) serverSections(ctx context.Context, lang *serverLanguage) []candidate {
	servers := b.in.LanguageServers
	if servers == nil {
		servers = lang.servers
	}
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	client, argv, err := lspclient.Start(ctx, servers, b.conf.Dir())
	if err != nil {
		why := lang.name + " language server unavailable (" + shortErr(err) + "): install one with " + lang.install + "; callers and tests found by text search instead"
		if !errors.Is(err, lspclient.ErrNoServer) {
			// Not the error's text: the server ran over the agent's code.
			why = lang.name + " language server failed to start: callers and tests found by text search instead"
		}
		b.notes = append(b.notes, why)
		return b.textSearchSections(why)
	}
	defer client.Close()
	b.notes = append(b.notes, lang.name+" through the language server "+filepath.Base(argv[0]))
	conv := &conversation{b: b, client: client, lang: lang, opened: map[string]bool{}}
	out, err := conv.sections(ctx)
	if err != nil {
		why := lang.name + " language server request failed: text search instead"
		b.notes = append(b.notes, why)
		return b.textSearchSections(why)
	}
	return out
}

// conversation is one language server's session for a pack.
type conversation struct {
	b      *builder
	client *lspclient.Client
	lang   *serverLanguage
	opened map[string]bool
}

// open tells the server about the file at rel (once) and returns its URI.
func (c *conversation) open(rel string) (string, error) {
	uri := lspclient.FileURI(filepath.Join(c.b.conf.Dir(), filepath.FromSlash(rel)))
	if c.opened[rel] {
		return uri, nil
	}
	l, err := c.b.src.lines(rel)
	if err != nil {
		return "", err
	}
	c.opened[rel] = true
	id := c.lang.exts[path.Ext(rel)]
	if id == "" {
		id = "plaintext"
	}
	return uri, c.client.DidOpen(uri, id, strings.Join(l, "\n")+"\n")
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

// sections are the pack's sections around the selection's innermost
// function or class, from the language server: its callers and callees,
// the tests that refer to it, and text search for the rest.
func (c *conversation) sections(ctx context.Context) ([]candidate, error) {
	b := c.b
	uri, err := c.open(b.sel.File)
	if err != nil {
		return nil, err
	}
	syms, err := c.client.DocumentSymbols(ctx, uri)
	if err != nil {
		return nil, err
	}
	target := innermost(syms, b.sel.StartLine-1)
	if c.lang.exts[".py"] == "" {
		// Not a variable or property inside it: the function or type.
		target = innermostOf(syms, b.sel.StartLine-1, isDefinitionSymbol)
	}
	if target == nil {
		return b.textSearchSections("the selection is outside any function or class: text search"), nil
	}
	pos := target.SelectionRange.Start
	neighbours, err := c.neighbours(ctx, uri, pos, target.Name)
	if err != nil {
		return nil, err
	}
	tests, err := c.tests(ctx, uri, pos, target.Name)
	if err != nil {
		return nil, err
	}
	out := []candidate{neighbours, tests}
	// The rest of the repository: text search stands in for the repo map.
	more := b.textSearchSections("")
	more[0].title = "Repo map (text search)"
	return append(out, more...), nil
}

// call is a function in the repository that calls the target, or that it
// calls.
type call struct {
	rel      string
	from, to int
	name     string
	relation string // caller or callee
}

// neighbours is the "Callers and callees" section of the target (name, at
// pos of uri): the whole definition of each (calls' order).
func (c *conversation) neighbours(ctx context.Context, uri string, pos lspclient.Position, name string) (candidate, error) {
	b := c.b
	neighbours := candidate{
		title:  "Callers and callees",
		reason: "functions that call " + name + " or that it calls, from the language server's call hierarchy",
		share:  shareNeighbour,
	}
	hits, err := c.calls(ctx, uri, pos)
	if err != nil {
		return candidate{}, err
	}
	for _, h := range hits {
		// Servers give the name's range, or the whole definition's.
		if from, to, ok := c.enclosing(ctx, h.rel, h.from); ok && from <= h.from && to >= h.to {
			h.from, h.to = from, to
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

// calls asks the server's call hierarchy for the calls into and out of
// the symbol at pos, keeping those in the repository, sorted (callees,
// then callers; by file and line) and each function once.
func (c *conversation) calls(ctx context.Context, uri string, pos lspclient.Position) ([]call, error) {
	items, err := c.client.PrepareCallHierarchy(ctx, uri, pos)
	if err != nil {
		return nil, err
	}
	var hits []call
	for _, it := range items {
		in, err := c.client.IncomingCalls(ctx, it)
		if err != nil {
			return nil, err
		}
		for _, x := range in {
			if rel, ok := c.b.relOf(x.From.URI); ok {
				hits = append(hits, call{rel, x.From.Range.Start.Line + 1, x.From.Range.End.Line + 1, x.From.Name, "caller"})
			}
		}
		outc, err := c.client.OutgoingCalls(ctx, it)
		if err != nil {
			return nil, err
		}
		for _, x := range outc {
			if rel, ok := c.b.relOf(x.To.URI); ok {
				hits = append(hits, call{rel, x.To.Range.Start.Line + 1, x.To.Range.End.Line + 1, x.To.Name, "callee"})
			}
		}
	}
	slices.SortFunc(hits, func(a, x call) int {
		return cmp.Or(cmp.Compare(a.relation, x.relation), cmp.Compare(a.rel, x.rel), cmp.Compare(a.from, x.from))
	})
	return slices.CompactFunc(hits, func(a, x call) bool { return a.rel == x.rel && a.from == x.from }), nil
}

// tests is the "Tests that reach the selection" section: each test
// function (in a test file) holding a reference to the target, once.
func (c *conversation) tests(ctx context.Context, uri string, pos lspclient.Position, name string) (candidate, error) {
	b := c.b
	tests := candidate{
		title:  "Tests that reach the selection",
		reason: "test functions that refer to " + name + " (language server references in test files)",
		share:  shareTests,
	}
	refs, err := c.client.References(ctx, uri, pos, false)
	if err != nil {
		return candidate{}, err
	}
	seen := map[string]bool{}
	for _, r := range refs {
		rel, ok := b.relOf(r.URI)
		if !ok || !c.lang.isTest(rel) && !c.inTestCode(ctx, rel, r.Range.Start.Line+1) {
			continue
		}
		from, to, ok := c.enclosing(ctx, rel, r.Range.Start.Line+1)
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
	slices.SortStableFunc(tests.items, func(a, x item) int { return cmp.Compare(a.label, x.label) })
	if len(tests.items) == 0 {
		tests.note = "no test file refers to " + name
	}
	return tests, nil
}

// enclosing is the definition holding line of rel (1-based lines): by
// indentation for Python, else the innermost function-like symbol the
// server lists for the file. ok is false when none holds it.
func (c *conversation) enclosing(ctx context.Context, rel string, line int) (from, to int, ok bool) {
	if c.lang.exts[".py"] != "" {
		return c.b.enclosingDef(rel, line)
	}
	uri, err := c.open(rel)
	if err != nil {
		return line, line, false
	}
	syms, err := c.client.DocumentSymbols(ctx, uri)
	if err != nil {
		return line, line, false
	}
	s := innermostOf(syms, line-1, isFunctionSymbol)
	if s == nil {
		return line, line, false
	}
	return s.Range.Start.Line + 1, s.Range.End.Line + 1, true
}

// inTestCode reports whether line of rel is inside test-only code of a
// file that is not a test file by its name: a Rust #[cfg(test)] module.
func (c *conversation) inTestCode(ctx context.Context, rel string, line int) bool {
	if path.Ext(rel) != ".rs" {
		return false
	}
	uri, err := c.open(rel)
	if err != nil {
		return false
	}
	syms, err := c.client.DocumentSymbols(ctx, uri)
	if err != nil {
		return false
	}
	for _, s := range syms {
		if s.Name == "tests" && s.Range.Start.Line <= line-1 && line-1 <= s.Range.End.Line {
			return true
		}
	}
	return false
}

// SymbolKind values of the LSP specification that are code.
const (
	symbolMethod      = 6
	symbolConstructor = 9
	symbolFunction    = 12
)

// isDefinitionSymbol is a function-like symbol or a type (class 5,
// interface 11, enum 10, struct 23).
func isDefinitionSymbol(s *lspclient.DocumentSymbol) bool {
	return isFunctionSymbol(s) || s.Kind == 5 || s.Kind == 10 || s.Kind == 11 || s.Kind == 23
}

func isFunctionSymbol(s *lspclient.DocumentSymbol) bool {
	return s.Kind == symbolMethod || s.Kind == symbolFunction || s.Kind == symbolConstructor
}

// innermostOf returns the deepest symbol keep accepts whose range holds
// line (0-based).
func innermostOf(syms []lspclient.DocumentSymbol, line int, keep func(*lspclient.DocumentSymbol) bool) *lspclient.DocumentSymbol {
	for i := range syms {
		s := &syms[i]
		if s.Range.Start.Line <= line && line <= s.Range.End.Line {
			if in := innermostOf(s.Children, line, keep); in != nil {
				return in
			}
			if keep(s) {
				return s
			}
		}
	}
	return nil
}

func isJSTest(rel string) bool {
	base := path.Base(rel)
	for _, mid := range []string{".test.", ".spec."} {
		if strings.Contains(base, mid) {
			return true
		}
	}
	return strings.Contains("/"+rel, "/test/") || strings.Contains("/"+rel, "/tests/") || strings.Contains("/"+rel, "/__tests__/")
}

// isRustTest is an integration test file (tests/ of a crate); unit tests
// in a source file's #[cfg(test)] module are found by inTestCode.
func isRustTest(rel string) bool {
	return strings.HasPrefix(rel, "tests/") || strings.Contains(rel, "/tests/")
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
