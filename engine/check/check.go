// Package check wires the verification gate to a real repository: it opens
// the repository with hardened git, snapshots the change, reads the
// configuration from the base commit, runs the gate with every language
// adapter and tamper rule, and records the run in the ledger.
//
// `bcode check`, the task runner's last step and bcode-ls all call Run, so
// every surface reaches the same verdict the same way.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
	"github.com/bcode-dev/bcode/verify/javascript"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/python"
	"github.com/bcode-dev/bcode/verify/secrets"
	"github.com/bcode-dev/bcode/verify/tamper"
)

// Recorder stores finished runs (the ledger). Nil: not recorded.
type Recorder interface {
	RecordVerification(ctx context.Context, v *engine.VerificationRun) (int64, error)
}

// Options says what to check and where to run it.
type Options struct {
	Repo   string // a directory inside the checkout
	Base   string // "" = merge-base with upstream/main
	Head   string // "" = the working tree
	Runner sandbox.Runner
	// Sandbox, when set, replaces Runner: the gate's builds and tests run
	// in a runner it opens on a fresh scratch directory, where the
	// snapshots and mutation files are made (an agent's change is
	// verified in the same confinement it was written in). Owner tags
	// that runner's work with the task attempt.
	Sandbox  sandbox.Sandbox
	Owner    sandbox.Owner
	Recorder Recorder
	Progress verify.Progress
	// Evidence replaces the gate's mutation evidence (default: verify/mutate
	// with the base config's [evidence] budgets); NoEvidence turns it off.
	Evidence   verify.Evidence
	NoEvidence bool
	// TaskID and Attempt tie the run to a task in the ledger.
	TaskID  string
	Attempt int64
	// Config is the base commit's configuration when the caller has read
	// it already (a task run reads it once, at its start, from the same
	// base); nil: read here.
	Config *config.Config
	// Packages installs the base's locked JavaScript packages for a change
	// that has no checkout of the user's (an agent's, or in a sandbox);
	// nil means javascript.Packages on the host with its default cache.
	Packages *javascript.Packages
	// Oracle is the task's pinned oracle (engine.Oracle), if it has one:
	// its tests are the gate's (verify.Gate.Oracle) and its files are
	// protected paths for this check (pinOracle).
	Oracle *engine.Oracle
	// Scanner is the secret scanner the gate's secret check uses, built
	// once per process by the caller (engine/app's Redactor) and required:
	// Run refuses to judge a change without one (ErrNoScanner).
	Scanner *secrets.Scanner
	// BaseResults keeps and gives back the untouched base's suite runs
	// (verify.Gate.BaseResults); nil takes the Recorder's when it keeps
	// them (the ledger: ledgerBaseResults). NoCache runs the base anyway,
	// and keeps nothing.
	BaseResults verify.BaseResults
	NoCache     bool
}

// ErrNoScanner: Run was called without Options.Scanner. The secret check
// is part of every verdict, so there is no fallback.
var ErrNoScanner = errors.New("check: no secret scanner: build the process's one (secrets.NewScanner, or engine/app's Redactor) and pass it in Options.Scanner")

// Run checks the change and returns the report. Problems that prevent a
// decision (not a repository, a bad revision, a broken base config) come
// back as a report with verdict error, so callers print one thing; the
// error is non-nil only when nothing could be reported at all.
func Run(ctx context.Context, o Options) (*verify.Report, error) {
	if o.Scanner == nil {
		return nil, ErrNoScanner
	}
	start := time.Now()
	rep, err := run(ctx, o)
	if rep == nil {
		return nil, err
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	// Every run is recorded, including those that ended in an error before
	// any test ran: "why did check say error yesterday" is a fair question.
	if o.Recorder != nil && ctx.Err() == nil {
		if rerr := record(ctx, o, rep); rerr != nil && err == nil {
			err = rerr
		}
	}
	return rep, err
}

func run(ctx context.Context, o Options) (*verify.Report, error) {
	fail := func(err error) *verify.Report {
		return &verify.Report{
			Verdict: verify.Error,
			Reasons: []verify.Reason{{Code: verify.ReasonEnvironment, Message: err.Error()}},
			Repo:    o.Repo, Base: o.Base, Head: o.Head,
			Tests: []verify.TestReport{}, Tamper: []verify.Finding{},
			Suite:   verify.SuiteReport{Targeted: verify.SuiteResult{Outcome: verify.NotRun}, Full: verify.SuiteResult{Outcome: verify.NotRun}},
			Timings: map[string]int64{},
		}
	}
	repo, err := git.Open(ctx, o.Repo)
	if err != nil {
		return fail(err), nil
	}
	// An agent's change, or one judged in a sandbox, has no checkout whose
	// installed packages its JavaScript tests could import: the base's
	// locked ones are installed on the host and shown read-only.
	var modules map[string]string
	var modulesNote string
	if o.TaskID != "" || o.Sandbox != nil {
		modules, modulesNote = lockedPackages(ctx, repo, o.Base, o.Packages)
	}
	runner, work := o.Runner, ""
	if o.Sandbox != nil {
		// The scratch directory goes after the workspace and the runner
		// (defers run last in, first out).
		if work, err = scratch.MkdirTemp("bcode-check-*"); err != nil {
			return fail(fmt.Errorf("the gate's scratch directory: %w", err)), nil
		}
		defer os.RemoveAll(work)
		var sb sandbox.Sandbox
		sb, modules = expose(o.Sandbox, modules)
		sr, err := sb.Open(ctx, work, o.Owner)
		if err != nil {
			return fail(fmt.Errorf("opening the %s sandbox to verify in: %w", o.Sandbox.Name(), err)), nil
		}
		defer sr.Close()
		runner = sr
	}
	if runner == nil {
		return fail(errors.New("check: no runner or sandbox to run the tests in")), nil
	}
	change, err := gitchange.LoadIn(ctx, repo, o.Base, o.Head, work)
	if err != nil {
		rep := fail(err)
		rep.Repo = repo.Dir
		return rep, nil
	}
	defer change.Workspace.Close()

	var cfg config.Config
	if o.Config != nil {
		cfg = *o.Config
	} else if cfg, err = baseConfig(ctx, change); err != nil {
		rep := fail(err)
		rep.Reasons[0].Code = verify.ReasonConfig
		rep.Repo, rep.Base, rep.Head = repo.Dir, change.Base, change.Head
		return rep, nil
	}
	g := GateWith(runner, cfg, o.Progress, o.Scanner)
	// An agent's change may not rewrite what existing tests pinned unless
	// the base's config allows it.
	g.AgentTask = o.TaskID != ""
	cfg = pinOracle(g, cfg, o.Oracle)
	installed(g, o, repo.Dir, modules)
	g.BaseResults = baseResults(o)
	switch {
	case o.NoEvidence:
	case o.Evidence != nil:
		g.Evidence = o.Evidence
	default:
		eo := mutate.Options{TempDir: work}
		if o.TaskID == "" && o.Sandbox == nil {
			eo.Checkout = repo.Dir
		}
		for _, a := range g.Adapters {
			if py, ok := a.(*python.Adapter); ok {
				// The mutants run under the interpreter the gate's runs
				// chose, and its probe is not made twice.
				eo.PythonFor = py.Interpreter
			}
		}
		g.EvidenceStart = mutate.GateEvidenceStart(EvidenceOptions(cfg, eo))
	}
	rep, err := g.Check(ctx, change, cfg)
	if rep != nil {
		nameOracleFiles(rep, o.Oracle)
		rep.Repo = repo.Dir
		holdTypeScript(ctx, rep, change)
		if modulesNote != "" {
			rep.Notes = append(rep.Notes, modulesNote)
		}
	}
	return rep, err
}

// baseConfig is the change's base commit's configuration
// (config.FromBase): the head's copy never counts.
func baseConfig(ctx context.Context, change *verify.Change) (config.Config, error) {
	return config.FromBase(func(p string) ([]byte, error) { return change.Workspace.ReadBase(ctx, p) })
}

// EvidenceOptions are o with the [evidence] settings of cfg (workers,
// compile_timeout, run_timeout, python_isolation) where o leaves them unset: the gate,
// `bcode evidence` and bcode-ls run mutants under the same settings, and a
// flag the user passes (o's) wins.
func EvidenceOptions(cfg config.Config, o mutate.Options) mutate.Options {
	return EvidenceOptionsIn(cfg, o, "")
}

// EvidenceOptionsIn is EvidenceOptions for a run on the user's own checkout
// on the host: its untracked .venv is a candidate interpreter, as in the
// gate's runs. checkout "" is none (an agent's worktree is hostile, and a
// container does not see the path).
func EvidenceOptionsIn(cfg config.Config, o mutate.Options, checkout string) mutate.Options {
	if o.Engines == nil {
		o.Engines = MutationEngines()
	}
	if o.Workers == 0 {
		o.Workers = cfg.Evidence.Workers
	}
	if o.CompileTimeout == 0 {
		o.CompileTimeout = cfg.Evidence.CompileTimeout.Duration
	}
	if o.RunTimeout == 0 {
		o.RunTimeout = cfg.Evidence.RunTimeout.Duration
	}
	if o.PythonIsolation == "" {
		o.PythonIsolation = cfg.Evidence.PythonIsolation
	}
	if o.Python == "" {
		// The interpreter the gate runs the tests with is the one the
		// Python mutants run under.
		o.Python = cfg.Gate.Python
	}
	if o.Checkout == "" {
		o.Checkout = checkout
	}
	if o.PythonFor == nil {
		// Chosen as the gate's Python adapter chooses, with the answers it
		// keeps (in memory for the process, as bcode-ls's saves share it,
		// and on disk for the host): launcher shims are not probed again on
		// every run.
		o.PythonFor = python.Chooser(o.Python, checkout)
	}
	return o
}

// EvidenceConfig is the base commit's configuration for an evidence run
// outside the gate; a broken file gives the defaults and a note saying so
// (the gate itself refuses to judge with it).
func EvidenceConfig(ctx context.Context, change *verify.Change) (config.Config, string) {
	cfg, err := baseConfig(ctx, change)
	if err != nil {
		return config.Default(), fmt.Sprintf("%v: [evidence] settings are the defaults until it is fixed", err)
	}
	return cfg, ""
}

// GateWith builds the gate with every language adapter and change-wide
// check, and the caller's secret scanner (required).
func GateWith(r sandbox.Runner, cfg config.Config, p verify.Progress, scanner *secrets.Scanner) *verify.Gate {
	return &verify.Gate{
		Runner:   r,
		Adapters: Adapters(r, cfg),
		Checks: []verify.Check{
			func(_ context.Context, c *verify.Change, cfg config.Config) ([]verify.Finding, error) {
				return tamper.Check(c, cfg), nil
			},
			// What landing the head would put in a checkout: the same
			// judgement accept makes (verify/tamper.Landing).
			tamper.CheckLanding,
			func(_ context.Context, c *verify.Change, _ config.Config) ([]verify.Finding, error) {
				return scanner.ScanChange(c), nil
			},
		},
		Progress: p,
	}
}

func record(ctx context.Context, o Options, rep *verify.Report) error {
	raw, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	_, err = o.Recorder.RecordVerification(ctx, &engine.VerificationRun{
		TaskID:     o.TaskID,
		Attempt:    o.Attempt,
		Repo:       rep.Repo,
		Base:       rep.Base,
		Head:       rep.Head,
		Verdict:    string(rep.Verdict),
		Report:     raw,
		DurationMS: rep.DurationMS,
		At:         time.Now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("recording the check in the ledger: %w", err)
	}
	return nil
}

// installed tells the adapters where the packages the tests import are.
// The user's own change on the host: their untracked .venv is the
// interpreter the tests run with, their node_modules the packages. Any
// other change: the base's locked packages (modules), where the runner's
// commands see them.
func installed(g *verify.Gate, o Options, checkout string, modules map[string]string) {
	own := o.TaskID == "" && o.Sandbox == nil
	for _, a := range g.Adapters {
		switch a := a.(type) {
		case *python.Adapter:
			if own {
				a.Checkout = checkout
			}
		case *javascript.Adapter:
			if own {
				a.Checkout = checkout
			}
			a.Modules = modules
		}
	}
}
