// Package javascript is the JavaScript mutation engine (a mutate.Engine).
// Mutants are found in the changed lines' tokens (tdewolff's js lexer),
// checked against the file's syntax tree (tdewolff's js parser): a kind of
// operator whose tokens and tree nodes do not agree is left alone. Each
// mutant is written as text into a per-worker copy of the head snapshot
// and the test files that import its file (verify/javascript's Targets)
// run under node --test through verify/javascript's own runner and
// reporter, so tests are named as the gate names them.
//
// TypeScript files are mutated where the project's runner runs them
// (vitest, jest, node --test with tsx), read by tokens alone
// (typeScriptSites); JSX and TSX are not.
package javascript

import (
	"path"
	"strings"

	"github.com/bcode-dev/bcode/verify"
	jsadapter "github.com/bcode-dev/bcode/verify/javascript"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// language is the engine's and verify/javascript's Test.Language.
const language = "javascript"

// Engine mutates JavaScript sources.
type Engine struct {
	// Node is the node executable (empty: "node"), as verify/javascript's
	// Adapter.Node.
	Node string
}

// New returns the JavaScript engine.
func New() *Engine { return &Engine{} }

var _ mutate.Engine = (*Engine)(nil)

// Language implements mutate.Engine.
func (*Engine) Language() string { return language }

// mutableExts are the files the engine mutates: plain JavaScript, the
// bytes node runs, and TypeScript (typeScriptExts) where the project's
// runner runs it.
var mutableExts = map[string]bool{".js": true, ".mjs": true, ".cjs": true}

// Mutable implements mutate.Engine: JavaScript and TypeScript sources
// outside node_modules that are not test files by node --test's patterns.
// Whether a TypeScript file's project runs it is asked in Prepare, where
// the snapshot is.
func (e *Engine) Mutable(p string) bool {
	a := e.adapter(mutate.Options{})
	ext := path.Ext(p)
	return (mutableExts[ext] || typeScriptExts[ext]) && a.Owns(p) && !a.IsTestFile(p)
}

// KillerName implements mutate.Engine: "file::name", the name's describe
// path joined by javascript.NameSep, as verify/javascript reports tests.
func (*Engine) KillerName(t verify.Test) string { return killerName(t) }

func killerName(t verify.Test) string {
	f := t.File
	if f == "" {
		f = t.Package
	}
	return f + "::" + t.Name
}

// testFile is the file of a name killerName made.
func testFile(name string) string {
	f, _, _ := strings.Cut(name, "::")
	return f
}

// adapter runs the tests as the gate's adapter does, with the user's
// installed packages when the run is on their checkout.
func (e *Engine) adapter(o mutate.Options) *jsadapter.Adapter {
	return &jsadapter.Adapter{Node: e.Node, Checkout: o.Checkout}
}

// Prepare implements mutate.Engine: it finds the mutants; the baseline
// and the mutants run in Finish.
func (e *Engine) Prepare(s *mutate.Session) (mutate.Job, error) {
	j := &job{s: s, adapter: e.adapter(s.Options)}
	if err := j.generate(s.Files(e)); err != nil {
		return nil, err
	}
	return j, nil
}
