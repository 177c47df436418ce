package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Oracle is a task's reproduction: the test command the user gave with
// --reproduce and, once the task's runner has run it on the base, the
// tests that failed there in every run (the pinned oracle) with the
// SHA-256 of their files at the base. The gate makes the pinned tests
// candidates, needs every one to flip for V1, and treats a change to their
// files as tampering.
type Oracle struct {
	// Command is the test command as the user gave it.
	Command string `json:"command"`
	// Selectors are the tests the command names, as the adapter selects
	// them (a Go -run pattern is a name pattern): what reproduction runs.
	Selectors []OracleTest `json:"selectors"`
	// Tests are the pinned failing tests; empty until reproduced.
	Tests []OracleTest `json:"tests,omitempty"`
	// Files are the pinned tests' files at the base, with their SHA-256.
	Files    []OracleFile `json:"files,omitempty"`
	PinnedAt *time.Time   `json:"pinned_at,omitempty"`
}

// OracleTest names one test as the gate does (verify.Test).
type OracleTest struct {
	Language string `json:"language"`
	Package  string `json:"package"`
	File     string `json:"file,omitempty"`
	Name     string `json:"name"`
}

// ID is the gate's test ID (verify.Test.ID).
func (t OracleTest) ID() string { return t.Language + ":" + t.Package + ":" + t.Name }

// OracleFile is one oracle test file at the base.
type OracleFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Pinned reports whether reproduction has pinned the oracle.
func (o *Oracle) Pinned() bool { return o != nil && len(o.Tests) > 0 }

// ErrBadOracle: an oracle the ledger refuses (no command, no selector, a
// pinned test or file without its name or hash).
var ErrBadOracle = errors.New("bad oracle")

// Check validates o before it is stored.
func (o *Oracle) Check() error {
	switch {
	case o == nil:
		return fmt.Errorf("%w: the oracle is nil", ErrBadOracle)
	case strings.TrimSpace(o.Command) == "":
		return fmt.Errorf("%w: the oracle has no command", ErrBadOracle)
	case len(o.Selectors) == 0:
		return fmt.Errorf("%w: the oracle selects no test", ErrBadOracle)
	}
	for _, t := range o.Selectors {
		if t.Language == "" || t.Package == "" {
			return fmt.Errorf("%w: a selector without a language or package", ErrBadOracle)
		}
	}
	for _, t := range o.Tests {
		if t.Language == "" || t.Package == "" || t.Name == "" {
			return fmt.Errorf("%w: an oracle test without a language, package or name", ErrBadOracle)
		}
	}
	for _, f := range o.Files {
		if f.Path == "" || len(f.SHA256) != 64 {
			return fmt.Errorf("%w: an oracle file without a path or a SHA-256", ErrBadOracle)
		}
	}
	return nil
}

// The events of reproduction, before any model call.
const (
	// EventReproduced: the --reproduce tests ran on the base: command,
	// ran, failing, passing, flaky, broken, runs; and the oracle pinned.
	EventReproduced EventKind = "task.reproduced"
	// EventNotReproducible: nothing failed on the base in every run (or
	// a test failed only in some): the task ends not_reproducible without
	// a model call. code, reason, and what ran and passed.
	EventNotReproducible EventKind = "task.not_reproducible"
)
