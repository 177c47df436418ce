package app

import (
	"context"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/verify"
)

// CheckRequest is what a check is of.
type CheckRequest struct {
	// Repo is a directory inside the checkout.
	Repo string
	// Base and Head are revisions; "" base: the merge-base with the
	// upstream or main branch; "" head: the working tree.
	Base, Head string
	// Docker runs the gate's builds and tests in the agent's sandbox
	// (bcode check --sandbox docker: a change nobody has read), configured
	// by the base commit's [sandbox]; false: the engine's runner.
	Docker     bool
	NoEvidence bool
	// NoCache runs the base's suite even when the ledger keeps its results
	// (check.Options.NoCache).
	NoCache  bool
	Progress verify.Progress
	// Note, when set, is told what the check chose not to do (the
	// modules the Docker check did not fetch).
	Note func(string)
}

// Check decides whether a change is verified and records the run in the
// ledger, the way every attempt's check does (engine/check). As
// check.Run, its error is non-nil with a report when the report could not
// be recorded, and without one when nothing could be reported.
func (e *Engine) Check(ctx context.Context, req CheckRequest) (*verify.Report, error) {
	led, err := e.ledger(ctx)
	if err != nil {
		return nil, err
	}
	// The process's one scanner: the secret check is part of the verdict.
	scanner, err := e.Redactor()
	if err != nil {
		return nil, err
	}
	o := check.Options{Repo: req.Repo, Base: req.Base, Head: req.Head, Runner: e.runner(),
		Recorder: led, Progress: req.Progress, NoEvidence: req.NoEvidence, NoCache: req.NoCache, Scanner: scanner}
	if req.Docker {
		note := req.Note
		if note == nil {
			note = func(string) {}
		}
		sb, err := dockerSandbox(ctx, req.Repo, req.Base, req.Head, note)
		if err != nil {
			return nil, err
		}
		o.Runner, o.Sandbox = nil, sb
	}
	return check.Run(ctx, o)
}
