// Package golang is the Go mutation engine (a mutate.Engine).
//
// Speed comes from mutant schemata: every mutant of a package is compiled
// into one test binary behind a switch read from the BCODE_MUTANT
// environment variable, so a package costs one build however many mutants
// it has. Each mutant then runs only the tests that cover it (per-test
// coverage recorded once from the baseline and cached by content hash).
// Mutants a schema cannot express fall back to one `go test -c -overlay`
// build each.
package golang

import (
	"errors"
	"strings"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// ErrNoGo reports that the go command is missing from the runner.
var ErrNoGo = errors.New("go toolchain not found: install Go (https://go.dev/dl) and put `go` on PATH")

// Engine mutates Go packages.
type Engine struct{}

// New returns the Go engine.
func New() *Engine { return &Engine{} }

// Language implements mutate.Engine.
func (*Engine) Language() string { return "go" }

// Mutable implements mutate.Engine: non-test Go sources.
func (*Engine) Mutable(p string) bool {
	return strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go")
}

// KillerName implements mutate.Engine: a subtest's kill is its top-level
// test's (`go test` reports the failure of both).
func (*Engine) KillerName(t verify.Test) string { return topLevel(t.Name) }

// Prepare implements mutate.Engine: go list, type checks, mutants, and the
// builds (the schema binary, or the binary the baseline runs from).
func (e *Engine) Prepare(ms *mutate.Session) (mutate.Job, error) {
	s := &session{
		ctx:    ms.Ctx,
		runner: ms.Runner,
		root:   ms.Root,
		change: ms.Change,
		opts:   &ms.Options,
		p:      ms.Progress,
		rep:    ms.Report,
		tmp:    ms.TempDir,
		files:  ms.Files(e),
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	return s, nil
}

// Finish implements mutate.Job: the pending baselines and every mutant.
func (s *session) Finish() error { return s.runMutants() }
