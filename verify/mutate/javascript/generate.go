package javascript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// JavaScript-only operators, beside the shared ones (mutate.Op*).
const (
	OpLogicalOperator = "logical_operator" // && <-> ||
	OpArithOperator   = "arith_operator"   // + <-> -, * <-> / outside index arithmetic
)

// token is one significant token of a file: its type, text and byte range.
type token struct {
	tt         js.TokenType
	text       string
	start, end int
}

// site is a mutant found in a file: its byte range, operator and texts.
type site struct {
	op, fn            string
	start, end        int
	original, mutated string
}

// boundary and negation are the comparison swaps the Go and Python
// engines make; equality gets its negation too.
var (
	boundary = map[js.TokenType]string{js.LtToken: "<=", js.LtEqToken: "<", js.GtToken: ">=", js.GtEqToken: ">"}
	negation = map[js.TokenType]string{
		js.LtToken: ">=", js.LtEqToken: ">", js.GtToken: "<=", js.GtEqToken: "<",
		js.EqEqEqToken: "!==", js.NotEqEqToken: "===", js.EqEqToken: "!=", js.NotEqToken: "==",
	}
	logical = map[js.TokenType]string{js.AndToken: "||", js.OrToken: "&&"}
	arith   = map[js.TokenType]string{js.AddToken: "-", js.SubToken: "+", js.MulToken: "/", js.DivToken: "*"}
)

// lex splits src into its significant tokens (no whitespace or comments).
// A / after a token that cannot end an operand starts a regular
// expression, the rule the grammar gives (a tokenizer's usual guess).
func lex(src []byte) ([]token, error) {
	in := parse.NewInputBytes(src)
	l := js.NewLexer(in)
	var out []token
	for {
		tt, data := l.Next()
		if tt == js.ErrorToken {
			if err := l.Err(); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return out, nil
		}
		switch tt {
		case js.WhitespaceToken, js.LineTerminatorToken, js.CommentToken, js.CommentLineTerminatorToken:
			continue
		case js.DivToken, js.DivEqToken:
			if len(out) == 0 || !endsOperand(out[len(out)-1]) {
				tt, data = l.RegExp()
				if tt == js.ErrorToken {
					return nil, l.Err()
				}
			}
		}
		end := in.Offset()
		out = append(out, token{tt: tt, text: string(data), start: end - len(data), end: end})
	}
}

// endsOperand reports whether t can be the last token of an operand, so
// that a + - or / after it is a binary operator.
func endsOperand(t token) bool {
	switch {
	case t.tt == js.CloseParenToken || t.tt == js.CloseBracketToken || t.tt == js.CloseBraceToken,
		t.tt == js.IncrToken || t.tt == js.DecrToken,
		t.tt == js.StringToken || t.tt == js.TemplateToken || t.tt == js.TemplateEndToken || t.tt == js.RegExpToken,
		t.tt == js.PrivateIdentifierToken, t.tt&js.NumericToken != 0:
		return true
	case t.tt == js.IdentifierToken:
		return true
	case t.tt == js.ThisToken || t.tt == js.NullToken || t.tt == js.TrueToken || t.tt == js.FalseToken || t.tt == js.SuperToken:
		return true
	}
	return false
}

// treeOps counts the binary operators of the file's syntax tree by type:
// the operators the lexer's tokens must match one for one.
type treeOps map[js.TokenType]int

func (c treeOps) Enter(n js.INode) js.IVisitor {
	if b, ok := n.(*js.BinaryExpr); ok {
		c[b.Op]++
	}
	return c
}

func (c treeOps) Exit(js.INode) {}

// sites are the mutants of src's tokens on the lines in changed. A kind of
// operator whose binary uses the lexer does not find as often as the
// syntax tree holds them is left out, and said in the notes: its tokens
// cannot be trusted to be the tree's operators.
func sites(rel string, src []byte, changed []verify.LineRange) ([]site, []string, error) {
	if typeScriptExts[path.Ext(rel)] {
		return typeScriptSites(rel, src, changed)
	}
	ast, err := js.Parse(parse.NewInputBytes(bytes.Clone(src)), js.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", rel, err)
	}
	tree := treeOps{}
	js.Walk(tree, ast)
	toks, err := lex(src)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", rel, err)
	}
	binary := binaryTokens(toks)
	lexed := map[js.TokenType]int{}
	for i := range toks {
		if binary[i] {
			lexed[toks[i].tt]++
		}
	}
	var notes []string
	var distrusted []string
	trusted := func(tt js.TokenType) bool {
		if lexed[tt] == tree[tt] {
			return true
		}
		distrusted = append(distrusted, tt.String())
		return false
	}
	lines := lineStarts(src)
	funcs := enclosingFuncs(toks)
	var out []site
	for i, t := range toks {
		if !onChanged(lines, t.start, changed) {
			continue
		}
		out = append(out, tokenSites(toks, i, binary, trusted, funcs[i])...)
	}
	if len(distrusted) > 0 {
		sort.Strings(distrusted)
		notes = append(notes, fmt.Sprintf("%s: the operators %s were not mutated: their tokens and the syntax tree disagree", rel, strings.Join(slicesCompact(distrusted), " ")))
	}
	return out, notes, nil
}

func slicesCompact(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || s[i-1] != x {
			out = append(out, x)
		}
	}
	return out
}

// binaryTokens marks the tokens that are binary operators: every
// comparison, && and ||, and + - * / after an operand.
func binaryTokens(toks []token) []bool {
	out := make([]bool, len(toks))
	for i, t := range toks {
		switch t.tt {
		case js.AddToken, js.SubToken, js.MulToken, js.DivToken:
			out[i] = i > 0 && endsOperand(toks[i-1])
		default:
			_, cmp := negation[t.tt]
			_, lg := logical[t.tt]
			out[i] = cmp || lg
		}
	}
	return out
}

// tokenSites are the mutants of toks[i].
func tokenSites(toks []token, i int, binary []bool, trusted func(js.TokenType) bool, fn string) []site {
	t := toks[i]
	at := func(op, to string) site {
		return site{op: op, fn: fn, start: t.start, end: t.end, original: t.text, mutated: to}
	}
	var out []site
	switch {
	case t.tt == js.TrueToken:
		out = append(out, at(mutate.OpBoolLiteral, "false"))
	case t.tt == js.FalseToken:
		out = append(out, at(mutate.OpBoolLiteral, "true"))
	case t.tt == js.DecimalToken || t.tt == js.IntegerToken:
		if v, err := strconv.ParseInt(t.text, 10, 64); err == nil && boundsSomething(toks, i) {
			out = append(out, at(mutate.OpConstantBound, strconv.FormatInt(v+1, 10)), at(mutate.OpConstantBound, strconv.FormatInt(v-1, 10)))
		}
	case !binary[i] || !trusted(t.tt):
	case boundary[t.tt] != "":
		out = append(out, at(mutate.OpConditionalBoundary, boundary[t.tt]), at(mutate.OpRelationalNegation, negation[t.tt]))
	case negation[t.tt] != "":
		out = append(out, at(mutate.OpRelationalNegation, negation[t.tt]))
	case logical[t.tt] != "":
		out = append(out, at(OpLogicalOperator, logical[t.tt]))
	case arith[t.tt] != "":
		if t.tt == js.AddToken && (isText(toks[i-1]) || i+1 < len(toks) && isText(toks[i+1])) {
			break // string concatenation
		}
		op := OpArithOperator
		if (t.tt == js.AddToken || t.tt == js.SubToken) && inIndex(toks, i) {
			op = mutate.OpArithIndex
		}
		out = append(out, at(op, arith[t.tt]))
	}
	return out
}

func isText(t token) bool {
	switch t.tt {
	case js.StringToken, js.TemplateToken, js.TemplateStartToken, js.TemplateEndToken:
		return true
	}
	return false
}

// boundsSomething reports whether the integer at toks[i] is an operand of
// a comparison or sits inside an index ([...] after an operand), the
// constants the other engines move by one.
func boundsSomething(toks []token, i int) bool {
	if i > 0 {
		if _, ok := negation[toks[i-1].tt]; ok {
			return true
		}
	}
	if i+1 < len(toks) {
		if _, ok := negation[toks[i+1].tt]; ok {
			return true
		}
	}
	return inIndex(toks, i)
}

// inIndex reports whether toks[i] is inside the brackets of an index
// expression (a [ that follows an operand), through arithmetic only.
func inIndex(toks []token, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch t := toks[j]; {
		case t.tt == js.OpenBracketToken:
			return j > 0 && endsOperand(toks[j-1])
		case t.tt == js.IdentifierToken || t.tt&js.NumericToken != 0 || t.tt == js.DotToken,
			t.tt == js.AddToken || t.tt == js.SubToken || t.tt == js.MulToken || t.tt == js.DivToken || t.tt == js.ModToken:
		default:
			return false
		}
	}
	return false
}

// enclosingFuncs names, for each token, the innermost `function name` or
// method whose braces hold it ("" at the top level), for mutant IDs.
func enclosingFuncs(toks []token) []string {
	out := make([]string, len(toks))
	var stack []string
	pending := ""
	for i, t := range toks {
		top := ""
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		out[i] = top
		switch {
		case t.tt == js.FunctionToken && i+1 < len(toks) && toks[i+1].tt == js.IdentifierToken:
			pending = toks[i+1].text
		case t.tt == js.IdentifierToken && i+1 < len(toks) && toks[i+1].tt == js.OpenParenToken && pending == "" && i > 0 && toks[i-1].tt == js.CloseBraceToken:
			pending = t.text // a method after another member
		case t.tt == js.OpenBraceToken:
			if pending != "" {
				top, pending = pending, ""
			}
			stack = append(stack, top)
		case t.tt == js.CloseBraceToken && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// lineStarts are the byte offsets at which src's lines start.
func lineStarts(src []byte) []int {
	out := []int{0}
	for i, c := range src {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// position is the 1-based line and byte column of offset off.
func position(lines []int, off int) (int, int) {
	i := sort.Search(len(lines), func(i int) bool { return lines[i] > off }) - 1
	return i + 1, off - lines[i] + 1
}

func onChanged(lines []int, off int, changed []verify.LineRange) bool {
	line, _ := position(lines, off)
	for _, r := range changed {
		if r.Start <= line && line <= r.End {
			return true
		}
	}
	return false
}
