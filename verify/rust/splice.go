package rust

import (
	"bytes"
	"path"
	"strings"
)

// A Rust file holds its unit tests itself, in modules compiled only for
// tests (#[cfg(test)] mod tests { … }). The gate's mixed snapshots (the
// base with the head's tests, the head with the base's) need such a
// file's code from one side and its tests from the other; SpliceTests
// makes that file.

// testModule is one top-level test-only module of a file: its name and
// its bytes, from its first attribute to its closing brace.
type testModule struct {
	name       string
	start, end int
}

// testModules lists src's top-level modules under #[cfg(test)], in order;
// false when the file's braces do not balance (then nothing is spliced).
func testModules(src []byte) ([]testModule, bool) {
	toks := lex(src)
	var out []testModule
	depth := 0
	attrStart, testOnly := -1, false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case depth == 0 && t.text == "#" && i+1 < len(toks) && toks[i+1].text == "[":
			end := matchBracket(toks, i+1)
			if attrStart < 0 {
				attrStart = t.off
			}
			testOnly = testOnly || strings.TrimSpace(joinTokens(nil, toks[i+2:end-1])) == "cfg ( test )"
			i = end - 1
		case depth == 0 && t.text == "mod" && i+2 < len(toks) && toks[i+1].kind == tokIdent && toks[i+2].text == "{":
			end := matchBrace(toks, i+2)
			if end > len(toks) || toks[end-1].text != "}" {
				return nil, false
			}
			if testOnly {
				last := toks[end-1]
				out = append(out, testModule{name: toks[i+1].text, start: attrStart, end: last.off + len(last.text)})
			}
			attrStart, testOnly = -1, false
			i = end - 1
		case t.text == "{":
			depth++
			attrStart, testOnly = -1, false
		case t.text == "}":
			if depth--; depth < 0 {
				return nil, false
			}
			attrStart, testOnly = -1, false
		case depth == 0 && (t.text == "pub" || t.text == "(" || t.text == ")" || t.text == "crate" || t.text == "super" || t.text == "in"):
			// a visibility between the attributes and `mod`
		case depth == 0:
			attrStart, testOnly = -1, false
		}
	}
	return out, depth == 0
}

// matchBracket returns the index after the ']' closing the '[' at open.
func matchBracket(toks []token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].text {
		case "[":
			depth++
		case "]":
			if depth--; depth == 0 {
				return j + 1
			}
		}
	}
	return len(toks)
}

// SpliceTests implements verify.TestSplicer: code's file with its
// top-level #[cfg(test)] modules replaced by those of tests — a module in
// both takes tests' version in code's place, one only in tests goes at the
// end, one only in code is dropped. False when p is not Rust source or
// either file's modules cannot be read.
func (a *Adapter) SpliceTests(p string, code, tests []byte) ([]byte, bool) {
	if path.Ext(p) != ".rs" {
		return nil, false
	}
	have, ok := testModules(code)
	if !ok {
		return nil, false
	}
	want, ok := testModules(tests)
	if !ok {
		return nil, false
	}
	byName := map[string]testModule{}
	for _, m := range want {
		byName[m.name] = m
	}
	var out bytes.Buffer
	at, placed := 0, map[string]bool{}
	for _, m := range have {
		out.Write(code[at:m.start])
		if w, ok := byName[m.name]; ok && !placed[m.name] {
			out.Write(tests[w.start:w.end])
			placed[m.name] = true
		}
		at = m.end
	}
	out.Write(code[at:])
	for _, w := range want {
		if !placed[w.name] {
			if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
				out.WriteByte('\n')
			}
			out.WriteByte('\n')
			out.Write(tests[w.start:w.end])
			out.WriteByte('\n')
		}
	}
	return out.Bytes(), true
}
