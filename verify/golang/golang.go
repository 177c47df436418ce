// Package golang is the verification gate's Go adapter: it finds the tests a
// change adds or modifies (by syntax tree, down to static subtests), runs
// them with `go test -json` through a sandbox.Runner, reads the test2json
// stream into outcomes, computes the packages a change reaches through
// `go list`, and reports Go-specific tampering (deleted or newly skipped
// tests, go.mod replace directives).
package golang

import (
	"path"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Adapter is the Go language support of the gate. The zero value is usable;
// New returns one with defaults spelled out.
type Adapter struct {
	// GoBin is the go command run in the sandbox; empty means "go".
	GoBin string
	// Env is added to every go command ("KEY=value"), on top of the
	// runner's scrubbed environment (e.g. GOFLAGS=-mod=mod, GOTOOLCHAIN=local).
	Env []string
	// Progress receives notes about work the adapter had to leave out (a
	// module outside go.work, a module whose packages could not be
	// listed), which the Adapter interface has no other channel for.
	Progress verify.Progress
}

// New returns an Adapter that runs "go" from the sandbox's PATH.
func New() *Adapter { return &Adapter{GoBin: "go"} }

var _ verify.Adapter = (*Adapter)(nil)

// Language implements verify.Adapter.
func (a *Adapter) Language() string { return "go" }

// Owns implements verify.Adapter: Go sources and the files that decide how
// they build.
func (a *Adapter) Owns(p string) bool {
	switch path.Base(p) {
	case "go.mod", "go.sum", "go.work", "go.work.sum":
		return true
	}
	return strings.HasSuffix(p, ".go")
}

// IsTestFile implements verify.Adapter.
func (a *Adapter) IsTestFile(p string) bool { return strings.HasSuffix(p, "_test.go") }

func (a *Adapter) goBin() string {
	if a.GoBin == "" {
		return "go"
	}
	return a.GoBin
}

func (a *Adapter) note(format string, args ...any) {
	if a.Progress != nil {
		a.Progress.Step(format, args...)
	}
}

// packageOfDir is the Test.Package of the files in d (slash-separated,
// relative to the repository root): a go command pattern.
func packageOfDir(d string) string {
	if d == "." || d == "" {
		return "."
	}
	return "./" + d
}
