package javascript

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// ErrSyntax reports a file that does not parse as JavaScript or TypeScript.
var ErrSyntax = errors.New("javascript syntax error")

// staticTest is one test or suite call found in a file's syntax: its path
// of names, its body printed from the syntax tree (so moving it or
// reformatting it changes nothing), and its modifiers, inherited from the
// suites around it.
type staticTest struct {
	Name    string // the path of names joined by NameSep
	Body    string
	Suite   bool // describe/suite: holds tests, is not one
	Skipped bool // .skip, .todo, { skip: true } or { todo: ... } here or on a suite around it
	Only    bool // .only or { only: true } on the call itself
}

// tsconfig keeps every import esbuild would otherwise drop as unused in
// TypeScript (an import only used as a type is removed anyway), so Targets
// sees the imports the file runs.
const tsconfig = `{"compilerOptions":{"verbatimModuleSyntax":true}}`

// parseFile parses a JavaScript or TypeScript file at p (its extension picks
// the syntax); TypeScript and JSX go through esbuild first.
func parseFile(p string, src []byte) (*js.AST, error) {
	if ext := path.Ext(p); isTypeScript(p) || ext == ".jsx" {
		loader := api.LoaderTS
		switch ext {
		case ".tsx":
			loader = api.LoaderTSX
		case ".jsx":
			loader = api.LoaderJSX
		}
		res := api.Transform(string(src), api.TransformOptions{Loader: loader, Target: api.ESNext, TsconfigRaw: tsconfig, Sourcefile: p})
		if len(res.Errors) > 0 {
			m := res.Errors[0]
			line := 0
			if m.Location != nil {
				line = m.Location.Line
			}
			return nil, fmt.Errorf("%w: %s:%d: %s", ErrSyntax, p, line, m.Text)
		}
		src = res.Code
	}
	ast, err := js.Parse(parse.NewInputBytes(src), js.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, p, err)
	}
	return ast, nil
}

// staticTests lists the tests and suites of a test file, in source order.
func staticTests(p string, src []byte) ([]staticTest, error) {
	ast, err := parseFile(p, src)
	if err != nil {
		return nil, err
	}
	f := &testFinder{}
	js.Walk(f, ast)
	return f.out, nil
}

// testFinder walks a file for test(...), it(...), describe(...) and
// suite(...) calls (with .skip, .only, .todo) whose first argument is a
// literal name, and for t.test(...) subtests inside a test's body.
type testFinder struct {
	out     []staticTest
	path    []string
	skipped bool // a suite around here is skipped
	inTest  bool // inside a test's (not a suite's) function
}

func (f *testFinder) Exit(js.INode) {}

func (f *testFinder) Enter(n js.INode) js.IVisitor {
	call, ok := n.(*js.CallExpr)
	if !ok {
		return f
	}
	kind, mods, ok := f.callee(call.X)
	if !ok || len(call.Args.List) == 0 {
		return f
	}
	name, ok := literalString(call.Args.List[0].Value)
	if !ok {
		return f
	}
	t := staticTest{Name: strings.Join(append(append([]string(nil), f.path...), name), NameSep), Suite: kind == "suite"}
	t.Skipped = f.skipped || mods["skip"] || mods["todo"]
	t.Only = mods["only"]
	var body js.INode
	for _, arg := range call.Args.List[1:] {
		switch v := arg.Value.(type) {
		case *js.ObjectExpr:
			opts := optionFlags(v)
			t.Skipped = t.Skipped || opts["skip"] || opts["todo"]
			t.Only = t.Only || opts["only"]
		case *js.ArrowFunc, *js.FuncDecl:
			body = v
		}
	}
	if body != nil {
		var b bytes.Buffer
		body.JS(&b)
		t.Body = b.String()
	}
	f.out = append(f.out, t)
	if body != nil {
		inner := &testFinder{path: append(append([]string(nil), f.path...), name), skipped: t.Skipped, inTest: !t.Suite}
		js.Walk(inner, body)
		f.out = append(f.out, inner.out...)
	}
	return nil
}

// callee reads what a call's callee is: "test" or "suite", and the
// modifiers chained after it (test.skip, describe.only, it.todo). Inside a
// test, any x.test(...) is a subtest (the t.test of node:test).
func (f *testFinder) callee(x js.IExpr) (kind string, mods map[string]bool, ok bool) {
	mods = map[string]bool{}
	for {
		switch v := x.(type) {
		case *js.Var:
			switch string(v.Data) {
			case "test", "it":
				return "test", mods, true
			case "describe", "suite":
				return "suite", mods, true
			}
			return "", nil, false
		case *js.DotExpr:
			var name string
			switch y := v.Y.(type) {
			case js.LiteralExpr: // the parser stores a property name by value
				name = string(y.Data)
			case *js.LiteralExpr:
				name = string(y.Data)
			case *js.Var:
				name = string(y.Data)
			default:
				return "", nil, false
			}
			switch name {
			case "skip", "only", "todo":
				mods[name] = true
				x = v.X
				continue
			case "test", "it", "describe", "suite":
				if _, isVar := v.X.(*js.Var); isVar && f.inTest {
					if name == "describe" || name == "suite" {
						return "suite", mods, true
					}
					return "test", mods, true
				}
			}
			return "", nil, false
		default:
			return "", nil, false
		}
	}
}

// optionFlags reads a test's options object: which of skip, todo and only
// are set to anything but a literal false, 0 or "" (a reason string skips).
func optionFlags(o *js.ObjectExpr) map[string]bool {
	out := map[string]bool{}
	for _, p := range o.List {
		if p.Name == nil || p.Spread {
			continue
		}
		key := p.Name.String()
		if s, ok := literalString(p.Name.Computed); ok {
			key = s
		}
		switch key {
		case "skip", "todo", "only":
			out[key] = !falsy(p.Value)
		}
	}
	return out
}

// falsy reports whether e is a literal false value.
func falsy(e js.IExpr) bool {
	lit, ok := e.(*js.LiteralExpr)
	if !ok {
		return false
	}
	switch lit.TokenType {
	case js.FalseToken, js.NullToken:
		return true
	case js.DecimalToken:
		return string(lit.Data) == "0"
	case js.StringToken:
		s, _ := literalString(lit)
		return s == ""
	}
	return false
}

// literalString is the value of a string literal or of a template without
// substitutions.
func literalString(e js.IExpr) (string, bool) {
	switch v := e.(type) {
	case *js.LiteralExpr:
		if v.TokenType != js.StringToken {
			return "", false
		}
		return unquote(v.Data)
	case *js.TemplateExpr:
		if v.Tag != nil || len(v.List) > 0 {
			return "", false
		}
		t := string(v.Tail)
		if len(t) < 2 {
			return "", false
		}
		return t[1 : len(t)-1], true
	}
	return "", false
}

// unquote reads a JavaScript string literal. JavaScript's escapes are
// close enough to Go's that strconv reads every test name people write;
// one it cannot read is taken as written.
func unquote(lit []byte) (string, bool) {
	s := string(lit)
	if len(s) < 2 {
		return "", false
	}
	if s[0] == '\'' {
		s = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:len(s)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u, true
	}
	return s[1 : len(s)-1], true
}
