package rust

import (
	"strings"
	"unicode"
)

// OperandKind classifies a token of Rust code a mutation engine may
// change.
type OperandKind int

const (
	// Comparison is a binary < <= > >= == !=.
	Comparison OperandKind = iota + 1
	// Logical is a binary && or ||.
	Logical
	// Arithmetic is a binary + - * /.
	Arithmetic
	// Integer is a decimal integer literal with no suffix.
	Integer
	// Bool is true or false.
	Bool
)

// CodeToken is a token of a Rust file's code (never of its test-only
// modules or test functions) that a mutation engine may change: its kind,
// text and byte range, its line, the fn it is in, and, for an integer,
// whether it is an operand of a comparison or inside an index, the
// constants the other engines move by one.
type CodeToken struct {
	Kind       OperandKind
	Text       string
	Start, End int
	Line       int
	Func       string
	Bounds     bool
}

// multiPunct are Rust's operators of more than one character, longest
// first: the lexer gives one token per character, and adjacent ones are
// joined into the longest operator they spell.
var multiPunct = []string{"<<=", ">>=", "...", "..=", "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<", ">>", ".."}

// opToken is a token of the joined stream.
type opToken struct {
	token
	end int
}

// joinPunct joins adjacent punctuation into Rust's operators, except that
// a > closing generic arguments stays alone (Vec<Vec<u8>>).
func joinPunct(toks []token) []opToken {
	var out []opToken
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		ot := opToken{token: t, end: t.off + len(t.text)}
		if t.kind == tokPunct {
			for _, op := range multiPunct {
				if spells(toks, i, op) {
					ot.text, ot.end = op, t.off+len(op)
					i += len(op) - 1
					break
				}
			}
		}
		out = append(out, ot)
	}
	return out
}

// spells reports whether toks from i are op's characters, side by side.
func spells(toks []token, i int, op string) bool {
	if i+len(op) > len(toks) {
		return false
	}
	for k := 0; k < len(op); k++ {
		t := toks[i+k]
		if t.kind != tokPunct || t.text != op[k:k+1] || t.off != toks[i].off+k {
			return false
		}
	}
	return true
}

// CodeTokens lists the tokens of src's code a mutation engine may change,
// in order. It reads tokens, not a syntax tree, so it leaves out what it
// cannot tell apart: < and > of generic arguments (after ::, a type's
// CamelCase name, fn/impl/struct/enum/trait/type names, `as` and `for`),
// a unary - * && or || (a closure with no parameters), + between trait
// bounds, and every token of a #[cfg(test)] module or a #[test] fn. A
// misread still ends safely: a mutant that does not compile is unviable.
func CodeTokens(src []byte) []CodeToken {
	raw := lex(src)
	skip := testRanges(raw)
	toks := joinPunct(raw)
	funcs := enclosingFns(toks)
	generic := genericAngles(toks)
	var out []CodeToken
	for i, t := range toks {
		if inRanges(skip, t.off) || generic[i] {
			continue
		}
		k := kindOf(toks, i)
		if k == 0 {
			continue
		}
		ct := CodeToken{Kind: k, Text: t.text, Start: t.off, End: t.end, Line: t.line, Func: funcs[i]}
		if k == Integer {
			ct.Bounds = boundsSomething(toks, i, generic)
		}
		out = append(out, ct)
	}
	return out
}

// kindOf is toks[i]'s kind, or 0 when it is nothing to mutate.
func kindOf(toks []opToken, i int) OperandKind {
	t := toks[i]
	binary := i > 0 && endsOperand(toks[i-1])
	switch {
	case t.kind == tokIdent && (t.text == "true" || t.text == "false"):
		return Bool
	case t.kind == tokLiteral && isPlainInt(t.text):
		return Integer
	case t.kind != tokPunct || !binary:
		return 0
	case t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=" || t.text == "==" || t.text == "!=":
		return Comparison
	case t.text == "&&" || t.text == "||":
		return Logical
	case t.text == "+" && isBound(toks, i):
		return 0
	case t.text == "+" || t.text == "-" || t.text == "*" || t.text == "/":
		return Arithmetic
	}
	return 0
}

// isPlainInt is a decimal integer literal without a type suffix or
// underscores: the constants whose ±1 is plain text.
func isPlainInt(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(s) == 1 || s[0] != '0'
}

// endsOperand reports whether t can end an expression, so that an
// operator after it is binary.
func endsOperand(t opToken) bool {
	switch t.kind {
	case tokLiteral:
		return true
	case tokIdent:
		switch t.text {
		case "return", "if", "else", "match", "while", "for", "in", "let", "mut", "ref", "move", "break", "continue", "as", "dyn", "impl", "where", "unsafe", "loop", "fn", "pub", "const", "static", "use", "mod", "struct", "enum", "trait", "type":
			return false
		}
		return true
	case tokPunct:
		return t.text == ")" || t.text == "]" || t.text == "?"
	}
	return false
}

// isBound reports whether the + at i joins trait bounds (T: Clone + Send,
// dyn A + B, impl A + 'a): its left side is a CamelCase name or a
// lifetime.
func isBound(toks []opToken, i int) bool {
	p := toks[i-1]
	return p.kind == tokLifetime || p.kind == tokIdent && isTypeName(p.text) || p.text == ">"
}

// isTypeName is a CamelCase name: an upper-case first letter and a lower
// case one later (MAX and N are constants, Vec and HashMap types).
func isTypeName(s string) bool {
	if s == "" || !unicode.IsUpper(rune(s[0])) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsLower) > 0
}

// byteRange is a half-open range of a source's bytes.
type byteRange struct{ start, end int }

func inRanges(rs []byteRange, off int) bool {
	for _, r := range rs {
		if off >= r.start && off < r.end {
			return true
		}
	}
	return false
}

// testRanges are the bytes of src's test-only code: every item under
// #[cfg(test)] or a test attribute (#[test], #[tokio::test]) at any depth,
// from its first attribute to its closing brace or semicolon, and the
// whole file under an inner #![cfg(test)].
func testRanges(toks []token) []byteRange {
	var out []byteRange
	for i := 0; i < len(toks); i++ {
		if toks[i].text != "#" || i+1 >= len(toks) {
			continue
		}
		inner := toks[i+1].text == "!"
		open := i + 1
		if inner {
			open++
		}
		if open >= len(toks) || toks[open].text != "[" {
			continue
		}
		end := matchBracket(toks, open)
		attr := strings.TrimSpace(joinTokens(nil, toks[open+1:max(open+1, end-1)]))
		testOnly := attr == "cfg ( test )" || attr == "test" || strings.HasSuffix(attr, ":: test")
		switch {
		case testOnly && inner:
			return []byteRange{{0, toks[len(toks)-1].off + len(toks[len(toks)-1].text)}}
		case testOnly:
			itemEnd := itemEnd(toks, end)
			last := toks[itemEnd-1]
			out = append(out, byteRange{toks[i].off, last.off + len(last.text)})
			i = itemEnd - 1
		default:
			i = end - 1
		}
	}
	return out
}

// itemEnd is the index after the item starting at toks[from] (past any
// further attributes): after its first top-level brace block, or after
// its semicolon when one comes first.
func itemEnd(toks []token, from int) int {
	depth := 0 // of ( and [
	for j := from; j < len(toks); j++ {
		switch toks[j].text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ";":
			if depth == 0 {
				return j + 1
			}
		case "{":
			if depth == 0 {
				return matchBrace(toks, j)
			}
		}
	}
	return len(toks)
}

// fnRange is a fn's name and the bytes of its body.
type fnRange struct {
	name string
	byteRange
}

// enclosingFns names, for each token, the innermost fn whose body holds
// it ("" outside every fn).
func enclosingFns(toks []opToken) []string {
	raw := make([]token, len(toks))
	for i, t := range toks {
		raw[i] = t.token
	}
	var fns []fnRange
	for i := 0; i+1 < len(raw); i++ {
		if raw[i].text != "fn" || raw[i].kind != tokIdent || raw[i+1].kind != tokIdent {
			continue
		}
		end := itemEnd(raw, i)
		last := raw[end-1]
		if last.text == "}" {
			fns = append(fns, fnRange{raw[i+1].text, byteRange{raw[i].off, last.off + 1}})
		}
	}
	out := make([]string, len(toks))
	for i, t := range toks {
		best := -1
		for k, f := range fns {
			if t.off >= f.start && t.off < f.end && (best < 0 || f.start >= fns[best].start) {
				best = k
			}
		}
		if best >= 0 {
			out[i] = fns[best].name
		}
	}
	return out
}

// typeKeywords name an item whose name generic parameters follow.
var typeKeywords = map[string]bool{"fn": true, "struct": true, "enum": true, "trait": true, "type": true, "union": true}

// genericAngles marks the < and > tokens (and the >> and >= that close
// generic arguments) that belong to generic arguments or parameters.
func genericAngles(toks []opToken) []bool {
	out := make([]bool, len(toks))
	depth := 0
	for i, t := range toks {
		switch {
		case t.kind != tokPunct:
		case depth > 0 && (t.text == ";" || t.text == "{" || t.text == "}" || t.text == "&&" || t.text == "||" || t.text == "=="):
			depth = 0 // a misread: the angles did not close
		case t.text == "<" && (depth > 0 || opensGeneric(toks, i)):
			out[i] = true
			depth++
		case depth > 0 && strings.HasPrefix(t.text, ">"):
			out[i] = true
			depth = max(0, depth-strings.Count(t.text, ">"))
		}
	}
	return out
}

// opensGeneric reports whether the < at i starts generic arguments or
// parameters: after ::, impl or for, a CamelCase name, an item's name, a
// type after `as`, or where no operand ends (a qualified path <T as X>).
func opensGeneric(toks []opToken, i int) bool {
	if i == 0 || !endsOperand(toks[i-1]) {
		return true
	}
	p := toks[i-1]
	switch {
	case p.text == "::" || p.text == "impl" || p.text == "for":
		return true
	case p.kind == tokIdent && isTypeName(p.text):
		return true
	case i >= 2 && toks[i-2].kind == tokIdent && (typeKeywords[toks[i-2].text] || toks[i-2].text == "as"):
		return true
	}
	return false
}

// boundsSomething reports whether the integer at i is an operand of a
// comparison or inside an index expression ([...] after an operand,
// through arithmetic only).
func boundsSomething(toks []opToken, i int, generic []bool) bool {
	isCmp := func(j int) bool {
		return j >= 0 && j < len(toks) && !generic[j] && toks[j].kind == tokPunct && kindOf(toks, j) == Comparison
	}
	if isCmp(i-1) || isCmp(i+1) {
		return true
	}
	for j := i - 1; j >= 0; j-- {
		switch t := toks[j]; {
		case t.text == "[":
			return j > 0 && endsOperand(toks[j-1])
		case t.kind == tokIdent || t.kind == tokLiteral || t.text == "." || t.text == "+" || t.text == "-" || t.text == "*" || t.text == "/" || t.text == "%":
		default:
			return false
		}
	}
	return false
}
