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
	// Fails is set by vitest's .fails and jest's .failing (here or on a
	// suite around it): the test passes when its body fails.
	Fails bool
	// Conditional is set by vitest's .skipIf(…) and .runIf(…), here or on
	// a suite around it: whether the test runs depends on its condition.
	Conditional bool
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
	skipped bool   // a suite around here is skipped
	fails   bool   // a suite around here is marked .fails or .failing
	cond    bool   // a suite around here is marked .skipIf or .runIf
	inTest  bool   // inside a test's (not a suite's) function
	row     string // the .each rows of the suites around here, printed
}

func (f *testFinder) Exit(js.INode) {}

func (f *testFinder) Enter(n js.INode) js.IVisitor {
	call, ok := n.(*js.CallExpr)
	if !ok {
		return f
	}
	c, ok := f.callee(call.X)
	if !ok || len(call.Args.List) == 0 {
		return f
	}
	name, ok := literalString(call.Args.List[0].Value)
	if !ok {
		return f
	}
	rows := []eachRow{{name: name}}
	if c.each {
		if rows, ok = eachRows(name, c.table); !ok {
			return nil // rows whose names cannot be read: no test ID to give
		}
	}
	t := staticTest{Suite: c.kind == "suite"}
	t.Skipped = f.skipped || c.mods["skip"] || c.mods["todo"]
	t.Only = c.mods["only"]
	t.Fails = f.fails || c.mods["fails"] || c.mods["failing"]
	t.Conditional = f.cond || c.mods["skipIf"] || c.mods["runIf"]
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
	for _, r := range rows {
		row := f.row + r.text
		rt := t
		rt.Name = strings.Join(append(append([]string(nil), f.path...), r.name), NameSep)
		if row != "" {
			rt.Body += "\x00" + row
		}
		f.out = append(f.out, rt)
		if body != nil {
			inner := &testFinder{path: append(append([]string(nil), f.path...), r.name), skipped: t.Skipped, fails: t.Fails, cond: t.Conditional, inTest: !t.Suite, row: row}
			js.Walk(inner, body)
			f.out = append(f.out, inner.out...)
		}
	}
	return nil
}

// callInfo is what a test call's callee says: "test" or "suite", the
// modifiers chained after it (test.skip, describe.only, it.todo,
// test.fails, it.skipIf(…), test.concurrent), and, for .each(table) or
// vitest's .for(table), the table.
type callInfo struct {
	kind  string
	mods  map[string]bool
	each  bool
	table js.IExpr
}

// modifiers are the chained names that leave a call a test or suite call.
var modifiers = map[string]bool{
	"skip": true, "only": true, "todo": true, "fails": true, "failing": true,
	"concurrent": true, "sequential": true, "shuffle": true,
}

// callee reads what a call's callee is. Inside a test, any x.test(...) is
// a subtest (the t.test of node:test).
func (f *testFinder) callee(x js.IExpr) (callInfo, bool) {
	c := callInfo{mods: map[string]bool{}}
	for {
		switch v := x.(type) {
		case *js.Var:
			switch string(v.Data) {
			case "test", "it":
				c.kind = "test"
				return c, true
			case "describe", "suite":
				c.kind = "suite"
				return c, true
			}
			return c, false
		case *js.CallExpr:
			// test.each(table)(…), test.for(table)(…), test.skipIf(cond)(…)
			dot, ok := v.X.(*js.DotExpr)
			if !ok {
				return c, false
			}
			switch name := propertyName(dot); name {
			case "each", "for":
				if c.each || len(v.Args.List) != 1 {
					return c, false
				}
				c.each, c.table = true, v.Args.List[0].Value
			case "skipIf", "runIf":
				c.mods[name] = true
			default:
				return c, false
			}
			x = dot.X
		case *js.DotExpr:
			name := propertyName(v)
			switch {
			case modifiers[name]:
				c.mods[name] = true
				x = v.X
				continue
			case name == "test" || name == "it" || name == "describe" || name == "suite":
				if _, isVar := v.X.(*js.Var); isVar && f.inTest {
					c.kind = "test"
					if name == "describe" || name == "suite" {
						c.kind = "suite"
					}
					return c, true
				}
			}
			return c, false
		default:
			return c, false
		}
	}
}

// propertyName is the name after the dot of x.name ("" for a computed
// one).
func propertyName(v *js.DotExpr) string {
	switch y := v.Y.(type) {
	case js.LiteralExpr: // the parser stores a property name by value
		return string(y.Data)
	case *js.LiteralExpr:
		return string(y.Data)
	case *js.Var:
		return string(y.Data)
	}
	return ""
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
