package app

import (
	"context"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// CheckRequest is what a check is of.
type CheckRequest struct {
	// Repo is a directory inside the checkout.
	Repo string
	// Base and Head are revisions; "" base: the merge-base with the
	// upstream or main branch; "" head: the working tree.
	Base, Head string
	// Sandbox, when set, is where the gate's builds and tests run (bcode
	// check --sandbox docker); nil: the engine's runner.
	Sandbox    sandbox.Sandbox
	NoEvidence bool
	Progress   verify.Progress
}

// Check decides whether a change is verified and records the run in the
// ledger, the way every attempt's check does (engine/check). As
// check.Run, its error is non-nil with a report when the report could not
// be recorded, and without one when nothing could be reported.
func (e *Engine) Check(ctx context.Context, req CheckRequest) (*verify.Report, error) {
	led, err := e.Ledger(ctx)
	if err != nil {
		return nil, err
	}
	// The process's one scanner: the secret check is part of the verdict.
	scanner, err := e.Redactor()
	if err != nil {
		return nil, err
	}
	o := check.Options{Repo: req.Repo, Base: req.Base, Head: req.Head, Runner: e.runner(),
		Recorder: led, Progress: req.Progress, NoEvidence: req.NoEvidence, Scanner: scanner}
	if req.Sandbox != nil {
		o.Runner, o.Sandbox = nil, req.Sandbox
	}
	return check.Run(ctx, o)
}
