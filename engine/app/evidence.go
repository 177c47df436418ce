package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
	"github.com/bcode-dev/bcode/verify/golang"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// EvidenceRequest is what an evidence run is for.
type EvidenceRequest struct {
	// Repo is the git checkout whose change is judged.
	Repo string
	// Base and Head are revisions; "" base: the merge-base with the
	// upstream or main branch; "" head: the working tree.
	Base, Head string
	// LastCommit: when Base is "" and nothing changed, judge the last
	// commit instead (on main with no upstream, what the user just
	// committed is the change they mean).
	LastCommit bool
	// Options are the caller's settings (its flags); the base commit's
	// [evidence] settings fill in what they leave unset.
	Options EvidenceOptions
	// Runner builds and runs the tests; nil: the host.
	Runner sandbox.Runner
	// Change, when set, is the change to judge instead of Repo's, with
	// its head laid out already at Dir (the benchmarks build theirs from
	// git diff). A change with no workspace has no base configuration to
	// read and runs with the defaults. With Change, Evidence's result is
	// never nil, even with an error.
	Change *verify.Change
	Dir    string
}

// EvidenceOptions are the settings a surface gives an evidence run. Zero
// values leave a setting to the base commit's [evidence] configuration
// (or its default); the language engines, timeouts and interpreter are
// the engine's to choose, as engine/check chooses them for the gate.
type EvidenceOptions struct {
	// Workers run mutants in parallel; 0: [evidence] workers, else the
	// number of CPUs.
	Workers int
	// Reach also mutates the functions the change's new or modified tests
	// cover, not only the changed lines.
	Reach bool
	// Overlay builds every mutant on its own instead of one schema per
	// package (slow; for comparison).
	Overlay bool
	// CacheDir holds the baseline coverage cache; "" is its default
	// under the user's cache directory.
	CacheDir string
	// PerProcessBaseline runs every baseline test in a process of its own
	// (for benchmarks and comparison).
	PerProcessBaseline bool
	// PythonIsolation is how Python mutants are kept apart: "state",
	// "fork" or "" ([evidence] python_isolation).
	PythonIsolation string
}

// mutateOptions are o as verify/mutate takes them, before the base
// commit's configuration fills the rest.
func (o EvidenceOptions) mutateOptions() mutate.Options {
	return mutate.Options{Workers: o.Workers, Reach: o.Reach, Overlay: o.Overlay, CacheDir: o.CacheDir,
		PerProcessBaseline: o.PerProcessBaseline, PythonIsolation: o.PythonIsolation}
}

// ErrRedBaseline is what Evidence's error matches (errors.Is) when the
// unmutated code fails its own tests, so no mutant verdict would mean
// anything; the error's text names the package and the failing tests.
var ErrRedBaseline = errors.New("baseline is red")

// redBaseline is an error of a red baseline, unchanged in text, that
// matches ErrRedBaseline.
type redBaseline struct{ error }

func (e redBaseline) Is(target error) bool { return target == ErrRedBaseline }
func (e redBaseline) Unwrap() error        { return e.error }

// EvidenceReport and EvidenceStats are the report of an evidence run and
// its counts and timings, as verify/mutate makes them; WriteEvidence
// renders a report.
type (
	EvidenceReport = mutate.Report
	EvidenceStats  = mutate.Stats
)

// EvidenceResult is one evidence run.
type EvidenceResult struct {
	// Base and Head are the commits (or tree) judged.
	Base, Head string
	// Report is empty (no mutants) when there was nothing to judge, and
	// Notes say why.
	Report *EvidenceReport
	// Notes are the engine's own: which change it judged, and a broken
	// configuration it fell back from. They come before Report.Notes.
	Notes []string
}

// Evidence runs the mutants of a repository's change, the way `bcode
// evidence`, bcode-ls and the benchmarks all do: the change from
// gitchange, the head laid out outside the checkout, the base commit's
// [evidence] settings under the caller's. A red baseline's error matches
// ErrRedBaseline; other errors from mutate keep their type (the Go
// engine's ErrNoGo) for the caller to explain.
func (e *Engine) Evidence(ctx context.Context, req EvidenceRequest, p verify.Progress) (*EvidenceResult, error) {
	if p == nil {
		p = verify.NoProgress{}
	}
	if req.Change != nil {
		rep, notes, err := e.evidenceOf(ctx, req.Runner, req.Dir, req.Change, req.Options, p, "")
		return &EvidenceResult{Base: req.Change.Base, Head: req.Change.Head, Report: rep, Notes: notes}, err
	}
	repo, err := git.Open(ctx, req.Repo)
	if err != nil {
		return nil, fmt.Errorf("%s is not a git checkout, so there is no change to find evidence for: %w", req.Repo, err)
	}
	change, notes, err := loadChange(ctx, repo, req)
	if err != nil {
		return nil, err
	}
	defer change.Workspace.Close()
	res := &EvidenceResult{Base: change.Base, Head: change.Head, Notes: notes}
	if why := nothingToMutate(change); why != "" {
		res.Notes = append(res.Notes, why)
		res.Report = &EvidenceReport{Mutants: []verify.Mutant{}, Stats: EvidenceStats{Verdicts: map[verify.MutantVerdict]int{}}}
		return res, nil
	}
	p.Step("laying out a snapshot of the head")
	dir, err := change.Workspace.Materialize(ctx, verify.HeadSide, nil)
	if err != nil {
		return nil, fmt.Errorf("snapshot of the head: %w", err)
	}
	// The user's own checkout on the host: its untracked .venv is an
	// interpreter candidate, as in the gate's runs of their change.
	checkout := ""
	if req.Runner == nil || req.Runner.Name() == "host" {
		checkout = repo.Dir
	}
	rep, cfgNotes, err := e.evidenceOf(ctx, req.Runner, dir, change, req.Options, p, checkout)
	res.Report, res.Notes = rep, append(res.Notes, cfgNotes...)
	return res, err
}

// evidenceOf runs the mutants of change on dir, where its head is laid
// out already, with the [evidence] settings of change's base commit
// filling what opts leaves unset; its notes say when that configuration
// was broken. With opts.Reach, the change's new or modified Go tests are
// found first. checkout is the user's checkout ("" none), whose untracked
// .venv is then an interpreter candidate.
func (e *Engine) evidenceOf(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change, opts EvidenceOptions, p verify.Progress, checkout string) (*EvidenceReport, []string, error) {
	if r == nil {
		r = e.runner()
	}
	if p == nil {
		p = verify.NoProgress{}
	}
	cfg, notes := config.Default(), []string(nil)
	if change.Workspace != nil {
		var note string
		if cfg, note = check.EvidenceConfig(ctx, change); note != "" {
			notes = append(notes, note)
		}
	}
	o := check.EvidenceOptionsIn(cfg, opts.mutateOptions(), checkout)
	if o.Reach {
		tests, err := golang.New().ChangedTests(ctx, change)
		if err != nil {
			return nil, notes, fmt.Errorf("finding the change's tests for --reach: %w", err)
		}
		o.Tests = tests
	}
	rep, err := mutate.Run(ctx, r, dir, change, o, p)
	if _, ok := errors.AsType[*mutate.BaselineError](err); ok {
		err = redBaseline{err}
	}
	return rep, notes, err
}

// loadChange is req's change; with req.LastCommit, the last commit's when
// the working tree has none.
func loadChange(ctx context.Context, repo *git.Repo, req EvidenceRequest) (*verify.Change, []string, error) {
	change, err := gitchange.Load(ctx, repo, req.Base, req.Head)
	if err != nil {
		return nil, nil, err
	}
	if len(change.Files) > 0 || req.Base != "" || !req.LastCommit {
		return change, nil, nil
	}
	parent, err := repo.Resolve(ctx, "HEAD^")
	if err != nil {
		return change, nil, nil // no parent: the first commit, nothing to fall back to
	}
	last, err := gitchange.Load(ctx, repo, parent, req.Head)
	if err != nil {
		return change, nil, nil
	}
	if len(last.Files) == 0 {
		last.Workspace.Close()
		return change, nil, nil
	}
	change.Workspace.Close()
	return last, []string{"no uncommitted change and no upstream ahead of it: showing the mutants of the last commit (" + shortID(parent) + "..HEAD)"}, nil
}

// nothingToMutate says why change has no mutants for
// check.MutationEngines ("" when it may have).
func nothingToMutate(change *verify.Change) string {
	engines := check.MutationEngines()
	if len(change.Files) == 0 {
		return fmt.Sprintf("no change: the working tree is the base %s, so there is nothing to judge (edit and save, or run evidence against an older base)", shortID(change.Base))
	}
	for _, f := range change.Files {
		if f.Status != verify.Deleted && mutate.EngineFor(engines, f.Path) != nil {
			return ""
		}
	}
	langs := make([]string, len(engines))
	for i, e := range engines {
		langs[i] = e.Language()
	}
	return "the change has no sources a mutation engine mutates (" + strings.Join(langs, ", ") + "), so there is nothing to mutate"
}

// shortID is a commit's first 12 hex digits, for notes.
func shortID(id string) string { return id[:min(len(id), 12)] }
