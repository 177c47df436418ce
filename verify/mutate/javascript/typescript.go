package javascript

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/tdewolff/parse/v2/js"

	"github.com/bcode-dev/bcode/verify"
)

// typeScriptExts are the TypeScript files the engine mutates: those the
// project's runner transforms (vitest, jest, node --test with tsx), with
// the same operators as JavaScript. TSX is left alone: its markup's angle
// brackets are not operators, and tokens cannot tell them apart.
var typeScriptExts = map[string]bool{".ts": true, ".mts": true, ".cts": true}

// typeScriptSites are the mutants of a TypeScript file's changed lines.
// No parser here reads TypeScript, so the JavaScript lexer's tokens stand
// alone: the angle brackets of type arguments and parameters are told
// from comparisons by what precedes them (genericAngles), and a misread
// ends safely, as a mutant the runner's transform refuses and that no
// test kills (no verdict). The notes say the file was read by tokens only.
func typeScriptSites(rel string, src []byte, changed []verify.LineRange) ([]site, []string, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", rel, err)
	}
	binary := binaryTokens(toks)
	for i, g := range genericAngles(toks) {
		if g {
			binary[i] = false
		}
	}
	trusted := func(js.TokenType) bool { return true }
	lines := lineStarts(src)
	funcs := enclosingFuncs(toks)
	var out []site
	for i, t := range toks {
		if !onChanged(lines, t.start, changed) || inTypeAnnotation(toks, i) {
			continue
		}
		out = append(out, tokenSites(toks, i, binary, trusted, funcs[i])...)
	}
	return out, nil, nil
}

// genericAngles marks the < and > tokens of type arguments and parameters
// (Array<string>, f<T>(x), Map<K, V[]>), and the >> and >>> that close
// nested ones.
func genericAngles(toks []token) []bool {
	out := make([]bool, len(toks))
	depth := 0
	for i, t := range toks {
		switch {
		case depth > 0 && (t.tt == js.SemicolonToken || t.tt == js.OpenBraceToken || t.tt == js.CloseBraceToken || t.tt == js.AndToken || t.tt == js.OrToken):
			depth = 0 // a misread: the angles did not close
		case t.tt == js.LtToken && (depth > 0 || opensTypeArguments(toks, i)):
			out[i] = true
			depth++
		case depth > 0 && (t.tt == js.GtToken || t.tt == js.GtGtToken || t.tt == js.GtGtGtToken):
			out[i] = true
			depth = max(0, depth-strings.Count(t.text, ">"))
		}
	}
	return out
}

// opensTypeArguments reports whether the < at i starts type arguments or
// parameters: after a CamelCase name (a type, a class), after a function's
// or type's name, or where no operand ends.
func opensTypeArguments(toks []token, i int) bool {
	if i == 0 || !endsOperand(toks[i-1]) {
		return true
	}
	p := toks[i-1]
	if p.tt == js.IdentifierToken && isTypeName(p.text) {
		return true
	}
	if i >= 2 {
		switch toks[i-2].text {
		case "function", "class", "interface", "type":
			return true
		}
	}
	return false
}

// isTypeName is a CamelCase name: an upper-case first letter and a lower
// case one later (MAX is a constant, Map a type).
func isTypeName(s string) bool {
	if s == "" || !unicode.IsUpper(rune(s[0])) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsLower) > 0
}

// inTypeAnnotation reports whether toks[i] is in a type annotation (after
// a : of a parameter, variable or return type, up to the , ) = { or ;
// that ends it at its own depth): literal types and unions are types, not
// values.
func inTypeAnnotation(toks []token, i int) bool {
	depth := 0
	for j := i - 1; j >= 0; j-- {
		switch t := toks[j]; t.tt {
		case js.CloseParenToken, js.CloseBracketToken, js.GtToken:
			depth++
		case js.OpenParenToken, js.OpenBracketToken, js.LtToken:
			if depth == 0 {
				return false
			}
			depth--
		case js.CommaToken, js.EqToken, js.OpenBraceToken, js.CloseBraceToken, js.SemicolonToken, js.ArrowToken, js.QuestionToken,
			js.ReturnToken, js.IfToken:
			if depth == 0 {
				return false
			}
		case js.ColonToken:
			if depth == 0 {
				return annotates(toks, j)
			}
		}
	}
	return false
}

// annotates reports whether the : at j starts a type annotation: after a
// name, an optional name's ? or a parameter list's ), and not the : of a
// conditional (a ? at the same depth before it) or of an object literal's
// property (a { or , before the name, outside parentheses).
func annotates(toks []token, j int) bool {
	if j == 0 {
		return false
	}
	p := toks[j-1]
	switch {
	case p.tt == js.QuestionToken:
		return j >= 2 && toks[j-2].tt == js.IdentifierToken
	case p.tt == js.CloseParenToken:
		return true
	case p.tt != js.IdentifierToken:
		return false
	}
	depth := 0
	for k := j - 2; k >= 0; k-- {
		switch toks[k].tt {
		case js.CloseParenToken, js.CloseBracketToken, js.CloseBraceToken:
			depth++
		case js.OpenParenToken:
			if depth == 0 {
				return true // a parameter
			}
			depth--
		case js.OpenBracketToken:
			depth--
		case js.OpenBraceToken:
			if depth == 0 {
				return false // an object literal's property (or a block's label)
			}
			depth--
		case js.QuestionToken:
			if depth == 0 {
				return false // a conditional's else branch
			}
		case js.SemicolonToken:
			if depth == 0 {
				return true
			}
		case js.VarToken, js.LetToken, js.ConstToken:
			if depth == 0 {
				return true
			}
		}
	}
	return true
}
