// Package rust is the Rust mutation engine (a mutate.Engine). Mutants are
// found in the tokens of the changed lines of a crate's code
// (verify/rust's CodeTokens, which leaves out generic angle brackets,
// trait bounds and every test-only item), written as text into a
// per-worker copy of the head snapshot, and judged by the tests of the
// crates the file reaches (verify/rust's Targets) run through
// verify/rust's own runner: cargo test --offline, one target at a time,
// tests named as the gate names them. A mutant that does not compile is
// unviable; the compiler is the parser that decides.
package rust

import (
	"path"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	rustadapter "github.com/bcode-dev/bcode/verify/rust"
)

// language is the engine's and verify/rust's Test.Language.
const language = "rust"

// Engine mutates Rust sources.
type Engine struct {
	// Adapter gives the Rust adapter for commands run by a runner (the
	// host needs the user's rustup and cargo homes, a container none);
	// nil means verify/rust's New.
	Adapter func(sandbox.Runner) *rustadapter.Adapter
}

// New returns the Rust engine.
func New() *Engine { return &Engine{} }

var _ mutate.Engine = (*Engine)(nil)

// Language implements mutate.Engine.
func (*Engine) Language() string { return language }

// Mutable implements mutate.Engine: the .rs files of a crate's code
// (not tests/, benches/ or examples/, not a build script), which may hold
// unit tests of their own: CodeTokens leaves those out.
func (e *Engine) Mutable(p string) bool {
	a := rustadapter.New()
	if path.Ext(p) != ".rs" || !a.Owns(p) || a.IsTestFile(p) || path.Base(p) == "build.rs" {
		return false
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "benches" || dir == "examples" {
			return false
		}
	}
	return true
}

// KillerName implements mutate.Engine: the test's target root file and
// its libtest name, "src/lib.rs::tests::adds".
func (*Engine) KillerName(t verify.Test) string { return killerName(t) }

func killerName(t verify.Test) string { return t.Package + "::" + t.Name }

// testFile is the file of a name killerName made: the target's root file.
func testFile(name string) string {
	f, _, _ := strings.Cut(name, "::")
	return f
}

func (e *Engine) adapter(r sandbox.Runner) *rustadapter.Adapter {
	if e.Adapter != nil {
		return e.Adapter(r)
	}
	return rustadapter.New()
}

// Prepare implements mutate.Engine: it finds the mutants; the baseline
// and the mutants run in Finish.
func (e *Engine) Prepare(s *mutate.Session) (mutate.Job, error) {
	j := &job{s: s, adapter: e.adapter(s.Runner)}
	j.generate(s.Files(e))
	return j, nil
}
