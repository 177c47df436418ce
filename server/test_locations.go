package server

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bcode-dev/bcode/server/lsp"
)

// jsNameSep joins a JavaScript test's describe path and its name
// (verify/javascript.NameSep).
const jsNameSep = " › "

// declPattern is the regular expression, for a test file of the
// extension ext, whose group 1 is the declared name of the test leaf; nil
// when bcode does not know how that language declares tests.
func declPattern(ext, leaf string) *regexp.Regexp {
	q := regexp.QuoteMeta(leaf)
	switch ext {
	case ".py":
		return regexp.MustCompile(`(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+(` + q + `)[ \t]*\(`)
	case ".rs":
		return regexp.MustCompile(`(?m)^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?(?:async[ \t]+)?fn[ \t]+(` + q + `)\b`)
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
		return regexp.MustCompile(`\b(?:test|it)(?:\.\w+)*[ \t]*\([ \t]*['"` + "`" + `](` + q + `)['"` + "`" + `]`)
	}
	return nil
}

// testLeaf is the last part of a test's name within its file: past a
// Python class or a Rust module ("::"), a JavaScript describe path
// (jsNameSep), and without pytest's parameters ("[…]").
func testLeaf(rest string) string {
	if i := strings.LastIndex(rest, "::"); i >= 0 {
		rest = rest[i+2:]
	}
	if i := strings.LastIndex(rest, jsNameSep); i >= 0 {
		rest = rest[i+len(jsNameSep):]
	}
	if i := strings.IndexByte(rest, '['); i > 0 && strings.HasSuffix(rest, "]") {
		rest = rest[:i]
	}
	return rest
}

// locateInFile finds a test the Python, JavaScript and Rust engines name
// "file::name" (file relative to the workspace, slash-separated) in that
// file: the test function's or the test call's name. A zero Location when
// it cannot (a file outside the workspace, a name declared elsewhere, as a
// Rust test in a module of its own file).
func (t *testLocator) locateInFile(file, rest string) lsp.Location {
	leaf := testLeaf(rest)
	key := "file\x00" + file + "\x00" + leaf
	if loc, ok := t.found[key]; ok {
		return loc
	}
	var loc lsp.Location
	re := declPattern(path.Ext(file), leaf)
	abs := filepath.Join(t.root, filepath.FromSlash(file))
	if b, err := t.read(abs); re != nil && leaf != "" && err == nil {
		text := string(b)
		if m := re.FindStringSubmatchIndex(text); m != nil {
			line := strings.Count(text[:m[2]], "\n")
			start := m[2] - (strings.LastIndexByte(text[:m[2]], '\n') + 1)
			l, _ := lineAt(text, line)
			end := min(start+len(leaf), len(l))
			loc = lsp.Location{URI: lsp.FileURI(abs), Range: lsp.Range{
				Start: lsp.Position{Line: uint32(line), Character: uint32(utf16Len(l[:start]))},
				End:   lsp.Position{Line: uint32(line), Character: uint32(utf16Len(l[:end]))},
			}}
		}
	}
	t.found[key] = loc
	return loc
}
