package rust

import (
	"strings"
)

// testFn is one test function a Rust file defines: a fn under an attribute
// whose path ends in "test" (#[test], #[tokio::test]) at module level.
type testFn struct {
	Name  string // the module path within its file and the fn's name: "tests::adds"
	Line  int
	Attrs []string // the fn's own attributes, as tokens joined: "ignore", "should_panic(expected = \"x\")"
	// Gates are the cfg attributes of the fn and the modules around it
	// (the file's inner ones included), except cfg(test).
	Gates []string
	// Body is the fn's token stream with its attributes; two versions with
	// the same Body are the same test whatever their lines.
	Body string
}

// modDecl is a `mod name;` declaration: its module's code is in another
// file, compiled only where the declaration is.
type modDecl struct {
	Name  string // the module path within the file: "tests", "a::b"
	Line  int
	Gates []string // as testFn.Gates
}

// frame is one open brace: a module (name set) or any other block.
type frame struct {
	module bool
	name   string
	gates  []string
}

// testFns finds the test functions of a Rust source file.
func testFns(src []byte) []testFn {
	p := &itemParser{toks: lex(src)}
	p.parse()
	return p.tests
}

// modDecls finds the out-of-line module declarations of a Rust file.
func modDecls(src []byte) []modDecl {
	p := &itemParser{toks: lex(src)}
	p.parse()
	return p.decls
}

type itemParser struct {
	toks    []token
	i       int
	stack   []frame
	pending []string // outer attributes waiting for their item
	inner   []string // the file's inner cfg attributes (#![cfg(…)])
	tests   []testFn
	decls   []modDecl
}

func (p *itemParser) at(i int) token {
	if i < len(p.toks) {
		return p.toks[i]
	}
	return token{kind: tokPunct, text: ""}
}

// inModule reports whether items here are module items (not in a fn,
// impl or other block).
func (p *itemParser) inModule() bool {
	return len(p.stack) == 0 || p.stack[len(p.stack)-1].module
}

func (p *itemParser) parse() {
	for p.i < len(p.toks) {
		t := p.toks[p.i]
		switch {
		case t.text == "#" && p.at(p.i+1).text == "[":
			p.pending = append(p.pending, p.attribute(p.i+1))
		case t.text == "#" && p.at(p.i+1).text == "!" && p.at(p.i+2).text == "[":
			a := p.attribute(p.i + 2)
			if isGate(a) {
				p.addInnerGate(a)
			}
		case t.kind == tokIdent && t.text == "mod" && p.at(p.i+1).kind == tokIdent && p.at(p.i+2).text == "{" && p.inModule():
			p.stack = append(p.stack, frame{module: true, name: p.at(p.i + 1).text, gates: gatesOf(p.pending)})
			p.pending = nil
			p.i += 3
		case t.kind == tokIdent && t.text == "mod" && p.at(p.i+1).kind == tokIdent && p.at(p.i+2).text == ";" && p.inModule():
			p.decls = append(p.decls, modDecl{Name: p.modulePath(p.at(p.i + 1).text), Line: t.line, Gates: p.gates(p.pending)})
			p.pending = nil
			p.i += 3
		case t.kind == tokIdent && t.text == "fn" && p.at(p.i+1).kind == tokIdent:
			p.function()
		case t.text == "{":
			p.stack = append(p.stack, frame{})
			p.pending = nil
			p.i++
		case t.text == "}":
			if len(p.stack) > 0 {
				p.stack = p.stack[:len(p.stack)-1]
			}
			p.pending = nil
			p.i++
		case t.text == ";":
			p.pending = nil
			p.i++
		default:
			p.i++
		}
	}
}

// addInnerGate records an inner cfg: on the file when no block is open,
// else on the innermost module.
func (p *itemParser) addInnerGate(a string) {
	if len(p.stack) == 0 {
		p.inner = append(p.inner, a)
		return
	}
	f := &p.stack[len(p.stack)-1]
	f.gates = append(f.gates, a)
}

// attribute reads the attribute whose '[' is at open and leaves p.i after
// its ']'. It returns the tokens inside, joined by spaces.
func (p *itemParser) attribute(open int) string {
	depth := 0
	var parts []string
	for j := open; j < len(p.toks); j++ {
		switch p.toks[j].text {
		case "[", "(", "{":
			depth++
		case "]", ")", "}":
			depth--
		}
		if depth == 0 {
			p.i = j + 1
			return strings.Join(parts, " ")
		}
		if j > open {
			parts = append(parts, p.toks[j].text)
		}
	}
	p.i = len(p.toks)
	return strings.Join(parts, " ")
}

// function reads a fn item at p.i ("fn name"), records it when it is a
// test, and leaves p.i after its body (or its ';').
func (p *itemParser) function() {
	start, line := p.i, p.toks[p.i].line
	name := p.toks[p.i+1].text
	attrs := p.pending
	p.pending = nil
	depth := 0
	j := p.i + 2
	for ; j < len(p.toks); j++ {
		switch p.toks[j].text {
		case "(", "[", "<":
			depth++
		case ")", "]", ">":
			depth--
		}
		if depth <= 0 && (p.toks[j].text == "{" || p.toks[j].text == ";") {
			break
		}
	}
	if j >= len(p.toks) || p.toks[j].text == ";" {
		p.i = j + 1
		return
	}
	end := matchBrace(p.toks, j)
	if p.inModule() && hasTestAttr(attrs) {
		p.tests = append(p.tests, testFn{
			Name:  p.modulePath(name),
			Line:  line,
			Attrs: attrs,
			Gates: p.gates(attrs),
			Body:  joinTokens(attrs, p.toks[start:end]),
		})
	}
	p.i = end
}

// matchBrace returns the index after the '}' closing the '{' at open.
func matchBrace(toks []token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].text {
		case "{":
			depth++
		case "}":
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(toks)
}

func (p *itemParser) modulePath(name string) string {
	var parts []string
	for _, f := range p.stack {
		if f.module {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(append(parts, name), "::")
}

func (p *itemParser) gates(attrs []string) []string {
	out := append([]string(nil), p.inner...)
	for _, f := range p.stack {
		out = append(out, f.gates...)
	}
	return append(out, gatesOf(attrs)...)
}

func joinTokens(attrs []string, toks []token) string {
	var b strings.Builder
	for _, a := range attrs {
		b.WriteString("#[" + a + "] ")
	}
	for _, t := range toks {
		b.WriteString(t.text)
		b.WriteByte(' ')
	}
	return b.String()
}

// hasTestAttr reports whether attrs mark a test: an attribute whose path
// ends in "test" (test, tokio::test, async_std::test, test_case is not one).
func hasTestAttr(attrs []string) bool {
	for _, a := range attrs {
		path, _, _ := strings.Cut(a, " (")
		path = strings.ReplaceAll(path, " ", "")
		if path == "test" || strings.HasSuffix(path, "::test") {
			return true
		}
	}
	return false
}

// isGate reports whether a is a cfg attribute that can leave code out of
// the test build: any cfg but cfg(test) itself.
func isGate(a string) bool {
	return strings.HasPrefix(a, "cfg (") && a != "cfg ( test )"
}

func gatesOf(attrs []string) []string {
	var out []string
	for _, a := range attrs {
		if isGate(a) {
			out = append(out, a)
		}
	}
	return out
}

// attrNamed returns the first attribute whose path is name ("ignore",
// "should_panic"), also inside cfg_attr(…, name), and whether there is one.
func attrNamed(attrs []string, name string) (string, bool) {
	for _, a := range attrs {
		if a == name || strings.HasPrefix(a, name+" ") {
			return a, true
		}
		if strings.HasPrefix(a, "cfg_attr (") && strings.Contains(a, ", "+name) {
			return a, true
		}
	}
	return "", false
}
