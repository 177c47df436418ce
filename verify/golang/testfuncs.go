package golang

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/doc"
	"go/parser"
	"go/scanner"
	"go/token"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// testFile is one side of a _test.go file, reduced to what the gate
// compares: its runnable test functions and its build constraint.
type testFile struct {
	Path  string
	Tests []*testFunc // in source order
	// Constraint is the file's //go:build (or // +build) expression, nil
	// when it has none; ConstraintLine is where it sits.
	Constraint     constraint.Expr
	ConstraintLine int
}

// testFunc is one top-level function go test runs.
type testFunc struct {
	Name string
	Kind string // "Test", "Fuzz" or "Example"
	Line int
	// Print is the function's token stream with comments and layout
	// dropped (plus, for an Example, its expected output), so two sides
	// compare equal exactly when the syntax is the same.
	Print string
	// Subtests are the static `t.Run("name", func…)` statements at the top
	// of a Test's body, when the test has no other t.Run calls; Rest is the
	// function printed without them. Both are empty when the test cannot
	// be split into subtests safely.
	Subtests []subtest
	Rest     string
	// Skips are the calls that skip the test (t.Skip, t.Skipf, t.SkipNow,
	// testing.Short) anywhere in its body.
	Skips []skipCall
}

type subtest struct {
	Name  string // as go test reports it, after rewriting and de-duplication
	Line  int
	Print string
}

type skipCall struct {
	Print string
	Text  string // the call as written, on one line
	Line  int
}

// parseError is a file that does not parse; its message names file:line.
type parseError struct {
	Path string
	Line int
	Msg  string
}

func (e *parseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// parseTestFile parses src (the content of path on one side) and extracts
// its tests.
func parseTestFile(path string, src []byte) (*testFile, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if ok := asErrorList(err, &list); ok && len(list) > 0 {
			return nil, &parseError{Path: path, Line: list[0].Pos.Line, Msg: list[0].Msg}
		}
		return nil, &parseError{Path: path, Msg: err.Error()}
	}
	toks := scanTokens(fset.File(file.Pos()), src)
	out := &testFile{Path: path}
	out.Constraint, out.ConstraintLine = fileConstraint(fset, file)

	testing := testingName(file)
	outputs := exampleOutputs(file)
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Body == nil || fn.Type.TypeParams != nil {
			continue
		}
		name := fn.Name.Name
		var kind string
		switch {
		case isTestName(name, "Test") && name != "TestMain" && hasTestingParam(fn, testing, "T"):
			kind = "Test"
		case isTestName(name, "Fuzz") && hasTestingParam(fn, testing, "F"):
			kind = "Fuzz"
		case isTestName(name, "Example"):
			// go test runs an example only when it declares its output.
			if _, runs := outputs[name]; !runs {
				continue
			}
			kind = "Example"
		default:
			continue
		}
		tf := &testFunc{
			Name:  name,
			Kind:  kind,
			Line:  fset.Position(fn.Pos()).Line,
			Print: toks.print(fn.Pos(), fn.End(), nil),
		}
		if kind == "Example" {
			tf.Print += "\x00output\x00" + outputs[name]
		}
		if kind == "Test" {
			tf.Subtests, tf.Rest = splitSubtests(fset, toks, fn, testing)
		}
		tf.Skips = skipCalls(fset, toks, src, fn, testing)
		out.Tests = append(out.Tests, tf)
	}
	return out, nil
}

func asErrorList(err error, list *scanner.ErrorList) bool {
	l, ok := err.(scanner.ErrorList)
	if ok {
		*list = l
	}
	return ok
}

// isTestName mirrors go test's rule: the prefix alone, or the prefix
// followed by something that does not start with a lower-case letter.
func isTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	if len(name) == len(prefix) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[len(prefix):])
	return !unicode.IsLower(r)
}

// testingName is how the file refers to package testing: its import name,
// "." for a dot import, "" when it does not import it.
func testingName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != "testing" {
			continue
		}
		if imp.Name != nil {
			if imp.Name.Name == "_" {
				return ""
			}
			return imp.Name.Name
		}
		return "testing"
	}
	return ""
}

// hasTestingParam reports whether fn has exactly one parameter of type
// *testing.<typ> and no results.
func hasTestingParam(fn *ast.FuncDecl, testing, typ string) bool {
	if testing == "" || fn.Type.Results != nil && len(fn.Type.Results.List) > 0 {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	return isTestingPtr(params[0].Type, testing, typ)
}

func isTestingPtr(e ast.Expr, testing, typ string) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == testing && x.Sel.Name == typ
	case *ast.Ident:
		return testing == "." && x.Name == typ
	}
	return false
}

// isTestingType reports whether e is *testing.T, *testing.F, *testing.B or
// testing.TB.
func isTestingType(e ast.Expr, testing string) bool {
	for _, typ := range []string{"T", "F", "B"} {
		if isTestingPtr(e, testing, typ) {
			return true
		}
	}
	switch x := e.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == testing && x.Sel.Name == "TB"
	case *ast.Ident:
		return testing == "." && x.Name == "TB"
	}
	return false
}

// paramName is the name of fn's single parameter ("" when unnamed or _).
func paramName(fn *ast.FuncDecl) string {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) != 1 || ps[0].Names[0].Name == "_" {
		return ""
	}
	return ps[0].Names[0].Name
}

// exampleOutputs maps each example go test runs to its expected output
// (with "unordered" marked, since that changes what passes).
func exampleOutputs(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, ex := range doc.Examples(f) {
		if ex.Output == "" && !ex.EmptyOutput {
			continue
		}
		out := ex.Output
		if ex.Unordered {
			out = "unordered\x00" + out
		}
		m["Example"+ex.Name] = out
	}
	return m
}

// fileConstraint returns the file's build constraint and its line.
func fileConstraint(fset *token.FileSet, f *ast.File) (constraint.Expr, int) {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if constraint.IsGoBuild(c.Text) || constraint.IsPlusBuild(c.Text) {
				if x, err := constraint.Parse(c.Text); err == nil {
					return x, fset.Position(c.Pos()).Line
				}
			}
		}
	}
	return nil, 0
}

// splitSubtests finds the static subtests of a Test: statements directly in
// its body of the form `t.Run("literal", func(...) {...})`. They run exactly
// once each, in order, so their names are known without running anything.
// A test with any other t.Run call (in a loop, with a computed name) is not
// split: the numbering go test gives duplicate names would be unknowable.
func splitSubtests(fset *token.FileSet, toks tokens, fn *ast.FuncDecl, testing string) ([]subtest, string) {
	t := paramName(fn)
	if t == "" {
		return nil, ""
	}
	var subs []subtest
	var cut []span
	static := map[*ast.CallExpr]bool{}
	names := newSubtestNamer()
	for _, st := range fn.Body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok || !isMethodCall(call, t, "Run") || len(call.Args) != 2 {
			continue
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		if _, ok := call.Args[1].(*ast.FuncLit); !ok {
			continue
		}
		raw, err := strconv.Unquote(lit.Value)
		if err != nil {
			continue
		}
		static[call] = true
		subs = append(subs, subtest{
			Name:  names.unique(rewriteSubtestName(raw)),
			Line:  fset.Position(call.Pos()).Line,
			Print: toks.print(call.Args[1].Pos(), call.Args[1].End(), nil),
		})
		cut = append(cut, span{st.Pos(), st.End()})
	}
	if len(subs) == 0 {
		return nil, ""
	}
	other := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && !static[call] && isMethodCall(call, t, "Run") {
			other = true
		}
		if lit, ok := n.(*ast.FuncLit); ok {
			// A subtest's own t.Run calls name grandchildren, which do
			// not affect this level's names; but only when its
			// parameter shadows t.
			if shadows(lit, t) {
				return false
			}
		}
		return !other
	})
	if other {
		return nil, ""
	}
	return subs, toks.print(fn.Pos(), fn.End(), cut)
}

func shadows(lit *ast.FuncLit, name string) bool {
	for _, p := range lit.Type.Params.List {
		for _, n := range p.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}

func isMethodCall(call *ast.CallExpr, recv, method string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != method {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == recv
}

// skipCalls lists calls that skip a test: Skip, Skipf or SkipNow on a
// parameter of type *testing.T, *testing.F, *testing.B or testing.TB (the
// test's own or a subtest's), and testing.Short(). Other methods named
// Skip (a reader's, an iterator's) are not skips.
func skipCalls(fset *token.FileSet, toks tokens, src []byte, fn *ast.FuncDecl, testing string) []skipCall {
	tvars := map[string]bool{}
	addParams := func(ft *ast.FuncType) {
		for _, p := range ft.Params.List {
			if !isTestingType(p.Type, testing) {
				continue
			}
			for _, n := range p.Names {
				tvars[n.Name] = true
			}
		}
	}
	addParams(fn.Type)
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok {
			addParams(lit.Type)
		}
		return true
	})
	var out []skipCall
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		skip := false
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			id, ok := fun.X.(*ast.Ident)
			switch fun.Sel.Name {
			case "Skip", "Skipf", "SkipNow":
				skip = ok && tvars[id.Name]
			case "Short":
				skip = ok && id.Name == testing && len(call.Args) == 0
			}
		case *ast.Ident:
			skip = testing == "." && fun.Name == "Short" && len(call.Args) == 0
		}
		if skip {
			from, to := fset.Position(call.Pos()), fset.Position(call.End())
			text := strings.Join(strings.Fields(string(src[from.Offset:to.Offset])), " ")
			if len(text) > 80 {
				text = strings.ToValidUTF8(text[:77], "") + "..."
			}
			out = append(out, skipCall{Print: toks.print(call.Pos(), call.End(), nil), Text: text, Line: from.Line})
		}
		return true
	})
	return out
}

// rewriteSubtestName applies go test's rewriting of subtest names: spaces
// become underscores and unprintable runes their quoted escapes.
func rewriteSubtestName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case isTestingSpace(r):
			b.WriteByte('_')
		case !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isTestingSpace is package testing's notion of a space, which is not
// Unicode's Z class.
func isTestingSpace(r rune) bool {
	if r < 0x2000 {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680:
			return true
		}
		return false
	}
	if r <= 0x200a {
		return true
	}
	switch r {
	case 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return false
}

// subtestNamer gives repeated subtest names go test's "#NN" suffixes.
type subtestNamer struct{ seen map[string]int }

func newSubtestNamer() *subtestNamer { return &subtestNamer{seen: map[string]int{}} }

func (n *subtestNamer) unique(name string) string {
	for {
		k := n.seen[name]
		n.seen[name] = k + 1
		if k == 0 && name != "" {
			if prefix, nn, ok := subtestNumber(name); ok && nn < n.seen[prefix] {
				// Explicitly named like the nn-th repeat of prefix,
				// which was already used: go test adds another suffix.
				continue
			}
			return name
		}
		s := fmt.Sprintf("%s#%02d", name, k)
		if n.seen[s] != 0 {
			continue
		}
		return s
	}
}

// subtestNumber splits a "#NN" suffix as go test formats it (at least two
// digits, no extra leading zeros, "#00" only for the empty name) off s.
func subtestNumber(s string) (string, int, bool) {
	i := strings.LastIndex(s, "#")
	if i < 0 {
		return s, 0, false
	}
	prefix, suffix := s[:i], s[i+1:]
	if len(suffix) < 2 || len(suffix) > 2 && suffix[0] == '0' || suffix == "00" && prefix != "" {
		return s, 0, false
	}
	n, err := strconv.ParseInt(suffix, 10, 32)
	if err != nil || n < 0 {
		return s, 0, false
	}
	return prefix, int(n), true
}

// span is a half-open source range to leave out of a print.
type span struct{ from, to token.Pos }

// tokens is a file's token stream without comments, positioned, so any node
// prints as the syntax it holds regardless of layout.
type tokens []tok

type tok struct {
	pos  token.Pos
	text string
}

func scanTokens(f *token.File, src []byte) tokens {
	var s scanner.Scanner
	s.Init(f, src, nil, 0) // mode 0: comments are skipped
	var out tokens
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			return out
		}
		text := t.String()
		switch {
		case t == token.SEMICOLON:
			text = ";" // an inserted semicolon has lit "\n"; both mean the same
		case lit != "":
			text = lit
		}
		if (text == ")" || text == "}") && len(out) > 0 && out[len(out)-1].text == ";" {
			// Go lets a semicolon before a closing ) or } be left out;
			// the newline that inserts one is layout, not syntax.
			out = out[:len(out)-1]
		}
		out = append(out, tok{pos, text})
	}
}

// print joins the tokens in [from, to), leaving out those inside cut and
// the semicolon that ends each cut statement.
func (ts tokens) print(from, to token.Pos, cut []span) string {
	var b strings.Builder
	skipSemi := false
	for _, t := range ts {
		if t.pos < from || t.pos >= to {
			continue
		}
		in := false
		for _, c := range cut {
			if t.pos >= c.from && t.pos < c.to {
				in = true
				break
			}
		}
		if in {
			skipSemi = true
			continue
		}
		if skipSemi && t.text == ";" {
			skipSemi = false
			continue
		}
		skipSemi = false
		b.WriteString(t.text)
		b.WriteByte(' ')
	}
	return b.String()
}
