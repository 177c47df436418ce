// Package app is bcode's engine as its surfaces see it: one value, opened
// once by each command (bcode, bcode-ls, bcode-bench), whose methods are
// the operations those surfaces offer. A surface parses its input, makes
// one call and presents the result; how an operation is wired (which
// configuration, which token counter, which redactor) is decided here once,
// so the CLI, the editor and the benchmarks cannot disagree about it.
package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// Engine is the engine one process opens. Its zero value is not usable:
// make one with New.
type Engine struct {
	// History reads tasks for the packs' task-history sections (the
	// ledger); nil: that section says it is unavailable.
	History pack.TaskHistory
	// Store keeps the Go index between packs; nil: each pack indexes
	// afresh.
	Store codegraph.Store
	// TokenizerProbe bounds how long a pack waits for the model server's
	// tokenizer before counting with the estimate; zero: runner.ProbeTimeout,
	// as an attempt waits.
	TokenizerProbe time.Duration

	scanOnce sync.Once
	scanner  *secrets.Scanner
	scanErr  error
}

// New returns an engine reading task history from history (may be nil).
func New(history pack.TaskHistory) *Engine { return &Engine{History: history} }

// Redactor is the secret scanner every pack and prompt goes through,
// loaded once per process.
func (e *Engine) Redactor() (*secrets.Scanner, error) {
	e.scanOnce.Do(func() { e.scanner, e.scanErr = secrets.NewScanner() })
	if e.scanErr != nil {
		return nil, fmt.Errorf("loading the secret rules that redact the pack: %w", e.scanErr)
	}
	return e.scanner, nil
}

// PackRequest is what a pack is for.
type PackRequest struct {
	// Repo is the directory whose files the pack reads (the user's
	// checkout, or an attempt's worktree).
	Repo string
	// Goal, Selection and Criteria describe the work; with TaskID, any
	// left empty are the task's.
	Goal      string
	Selection *engine.Selection
	Criteria  []string
	TaskID    string
	// Budget in tokens; 0: pack.DefaultBudget.
	Budget int
	// Tokenizer is the llama-server to count tokens with; "": the [model]
	// endpoint of .bcode/config.toml at the task's base commit (HEAD when
	// there is no task), the one an attempt counts with.
	Tokenizer string
}

// ErrNoHistory: a pack for a task was asked of an engine with no ledger.
var ErrNoHistory = errors.New("app: a task's pack needs the ledger")

// Pack builds the context pack for req the way an attempt builds its own
// (runner.PackBuilder, with the same token counter), so the pack the
// editor previews or `bcode pack` prints for a task is, byte for byte, the
// pack its agent gets.
func (e *Engine) Pack(ctx context.Context, req PackRequest) (*pack.Pack, error) {
	t := engine.Task{Goal: req.Goal, Selection: req.Selection, Criteria: req.Criteria}
	base := "HEAD"
	if req.TaskID != "" {
		if e.History == nil {
			return nil, ErrNoHistory
		}
		known, err := e.History.Task(ctx, req.TaskID)
		if err != nil {
			return nil, err
		}
		t.ID, base = known.ID, known.Base
		if t.Goal == "" {
			t.Goal = known.Goal
		}
		if t.Selection == nil {
			t.Selection = known.Selection
		}
		if t.Criteria == nil {
			t.Criteria = known.Criteria
		}
	}
	redactor, err := e.Redactor()
	if err != nil {
		return nil, err
	}
	endpoint := req.Tokenizer
	if endpoint == "" {
		endpoint = baseConfig(ctx, req.Repo, base).Model.Endpoint
	}
	probe := e.TokenizerProbe
	if probe == 0 {
		probe = runner.ProbeTimeout
	}
	b := runner.NewPackBuilder(ctx, endpoint, probe, redactor, e.History)
	b.Budget, b.Store = req.Budget, e.Store
	return b.Build(ctx, t, req.Repo)
}

// baseConfig is .bcode/config.toml at rev of the repository at dir, as
// the gate and the runner read it; the defaults when dir is not a
// repository or the file is missing or broken (a pack is still useful).
func baseConfig(ctx context.Context, dir, rev string) config.Config {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return config.Default()
	}
	cfg, err := task.BaseConfig(ctx, repo, rev)
	if err != nil {
		return config.Default()
	}
	return cfg
}
