package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
)

// ReproduceOptions say which tests a task's reproduction runs, on which
// base, and where: the runner or sandbox its checks use.
type ReproduceOptions struct {
	Repo, Base string
	Runner     sandbox.Runner
	Sandbox    sandbox.Sandbox
	Owner      sandbox.Owner
	// Config is the base's configuration (flake_runs, test_timeout).
	Config    config.Config
	Selectors []verify.Test
}

// Reproduce runs the selected tests on a fresh snapshot of the base, with
// the gate's adapters and flake repeats (verify.Gate.Reproduce), in the
// same confinement a check of the task runs in.
func Reproduce(ctx context.Context, o ReproduceOptions) (*verify.Reproduction, error) {
	repo, err := git.Open(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	runner, work := o.Runner, ""
	if o.Sandbox != nil {
		if work, err = scratch.MkdirTemp("bcode-reproduce-*"); err != nil {
			return nil, fmt.Errorf("reproduce: the scratch directory: %w", err)
		}
		defer os.RemoveAll(work)
		sr, err := o.Sandbox.Open(ctx, work, o.Owner)
		if err != nil {
			return nil, fmt.Errorf("reproduce: opening the %s sandbox: %w", o.Sandbox.Name(), err)
		}
		defer sr.Close()
		runner = sr
	}
	if runner == nil {
		return nil, errors.New("reproduce: no runner or sandbox to run the tests in")
	}
	same, err := gitchange.LoadIn(ctx, repo, o.Base, o.Base, work)
	if err != nil {
		return nil, fmt.Errorf("reproduce: %w", err)
	}
	defer same.Workspace.Close()
	dir, err := same.Workspace.Materialize(ctx, verify.BaseSide, nil)
	if err != nil {
		return nil, fmt.Errorf("reproduce: a snapshot of the base: %w", err)
	}
	g := &verify.Gate{Runner: runner, Adapters: Adapters(runner, o.Config)}
	return g.Reproduce(ctx, dir, o.Selectors, o.Config)
}

// pinOracle gives the gate a task's pinned oracle: its tests, which V1
// needs to flip, and its files, which the change must leave as they are
// at the base. They join the base's gate.protected for this check, so the
// gate's own tamper rule (protected_path) judges an edit to them; cfg is
// returned with its own copy of the list.
func pinOracle(g *verify.Gate, cfg config.Config, o *engine.Oracle) config.Config {
	if !o.Pinned() {
		return cfg
	}
	for _, t := range o.Tests {
		g.Oracle = append(g.Oracle, verify.Test{Language: t.Language, Package: t.Package, File: t.File, Name: t.Name})
	}
	protected := append([]string(nil), cfg.Gate.Protected...)
	for _, f := range o.Files {
		protected = append(protected, "/"+f.Path)
	}
	cfg.Gate.Protected = protected
	return cfg
}

// nameOracleFiles says, in the findings and reasons pinOracle's protected
// paths caused, that the file is the task's oracle: the user did not list
// it in gate.protected.
func nameOracleFiles(rep *verify.Report, o *engine.Oracle) {
	if !o.Pinned() {
		return
	}
	const why = "the task's pinned oracle test file (--reproduce): a change to it is tampering"
	for _, f := range o.Files {
		glob := fmt.Sprintf("%q", "/"+f.Path)
		for i, t := range rep.Tamper {
			if t.Code == verify.FindingProtectedPath && t.Path == f.Path && strings.Contains(t.Message, glob) {
				rep.Tamper[i].Message = why
			}
		}
		for i, r := range rep.Reasons {
			if r.Code == verify.ReasonTamper && strings.HasPrefix(r.Message, f.Path+": ") && strings.Contains(r.Message, glob) {
				rep.Reasons[i].Message = f.Path + ": " + why
			}
		}
	}
}
