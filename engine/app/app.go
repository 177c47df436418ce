// Package app is bcode's engine as its surfaces see it: one value, opened
// once by each command (bcode, bcode-ls), whose methods are
// the operations those surfaces offer. A surface parses its input, makes
// one call and presents the result; how an operation is wired (which
// configuration, which token counter, which redactor) is decided here once,
// so the CLI, the editor and the benchmarks cannot disagree about it.
package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/backend"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// Options are what a command opens its engine with: where the ledger is,
// the agent it runs tasks with, where checks run.
type Options struct {
	// LedgerPath is the SQLite ledger file, in the state directory that
	// also holds this machine's worktrees; "": ledger.DefaultPath().
	LedgerPath string
	// Ledger is the user's choice of a shared ledger (--ledger,
	// $BCODE_LEDGER, ~/.config/bcode/ledger: backend.Resolve); zero: the
	// SQLite file at LedgerPath.
	Ledger LedgerChoice
	// Agent builds each task's agent (engine/agentbackend's Backend, which
	// each cmd injects); nil: tasks can be created and read, not run.
	Agent AgentBackend
	// Runner runs the builds and tests of checks and evidence; nil: the
	// host.
	Runner sandbox.Runner
	// By names who cancelled, accepted or rejected a task, in the ledger's
	// events; "": "the user".
	By string
}

// Engine is the engine one process opens. Its zero value is not usable:
// make one with Open, and Close it when the process is done.
type Engine struct {
	opts Options

	mu  sync.Mutex
	led ledger.Store // opened on first use

	scanOnce sync.Once
	scanner  *secrets.Scanner
	scanErr  error
}

// Open returns the engine for o. Nothing is opened yet: the ledger opens
// on the first operation that needs it.
func Open(o Options) *Engine { return &Engine{opts: o} }

// runner is where checks and evidence run.
func (e *Engine) runner() sandbox.Runner {
	if e.opts.Runner != nil {
		return e.opts.Runner
	}
	return host.New()
}

// Redactor is the secret scanner every pack and prompt goes through,
// loaded once per process.
func (e *Engine) Redactor() (*secrets.Scanner, error) {
	e.scanOnce.Do(func() { e.scanner, e.scanErr = secrets.NewScanner() })
	if e.scanErr != nil {
		return nil, fmt.Errorf("loading the secret rules that redact the pack: %w", e.scanErr)
	}
	return e.scanner, nil
}

// Pack is a context pack as Engine.Pack builds it; its Markdown and JSON
// methods render it.
type Pack = pack.Pack

// Budgets of a pack, in tokens.
const (
	// DefaultPackBudget is a pack's budget when the request names none.
	DefaultPackBudget = pack.DefaultBudget
	// MinPackBudget is the smallest budget a pack can be built for.
	MinPackBudget = pack.MinBudget
)

// PackIndex is a Go index a caller keeps in memory between its packs (a
// bcode-ls connection's), so only changed packages are indexed again. Its
// zero value is an empty index; one pack at a time may use it.
type PackIndex struct{ store codegraph.MemoryStore }

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
	// Budget in tokens; 0: DefaultPackBudget.
	Budget int
	// Tokenizer is the llama-server to count tokens with, once its /props
	// shows it is one (else the estimate counts); "": the [model]
	// endpoint of .bcode/config.toml at the task's base commit (HEAD when
	// there is no task), the one an attempt counts with.
	Tokenizer string
	// Index keeps the Go index between this caller's packs (a bcode-ls
	// connection's); nil: KeepIndex decides.
	Index *PackIndex
	// KeepIndex keeps the Go index between packs in the engine's ledger
	// (bcode pack), opening it (and creating it if need be); when it
	// cannot, the pack indexes in memory and Note says why, unless the
	// pack is for a task, whose history needs the ledger.
	KeepIndex bool
	// TokenizerProbe bounds how long the pack waits for the model
	// server's tokenizer before counting with the estimate; zero:
	// runner.ProbeTimeout, as an attempt waits.
	TokenizerProbe time.Duration
	// IndexProgress, when set, hears of each package the Go index
	// indexes for this pack (bcode-ls shows it as $/progress).
	IndexProgress func(done, total int, dir string)
	// Note, when set, is told what the pack fell back on.
	Note func(string)
}

// Pack builds the context pack for req the way an attempt builds its own
// (runner.PackBuilder, with the same token counter), so the pack the
// editor previews or `bcode pack` prints for a task is, byte for byte, the
// pack its agent gets.
func (e *Engine) Pack(ctx context.Context, req PackRequest) (*Pack, error) {
	// The configuration at HEAD (read when no tokenizer is given) and the
	// history both start from HEAD: one git process finds it for both,
	// started now when the configuration will need it, so that it runs
	// while the ledger opens.
	ctx = git.WithHeadMemo(ctx)
	if req.TaskID == "" && req.Tokenizer == "" {
		go git.HeadOf(ctx, req.Repo)
	}
	index, err := e.packIndex(ctx, req)
	if err != nil {
		return nil, err
	}
	t := engine.Task{Goal: req.Goal, Selection: req.Selection, Criteria: req.Criteria}
	base := "HEAD"
	if req.TaskID != "" {
		known, err := e.Task(ctx, req.TaskID)
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
	var redactor pack.Redactor
	var memo *secrets.CleanMemo
	if req.Index == nil {
		// A one-shot pack (the CLI's): the rules are compiled only when a
		// text was never scanned clean before.
		dir, _ := sandbox.CacheDir("secrets")
		memo = secrets.NewCleanMemo(dir, e.Redactor)
		redactor = memo
	} else if redactor, err = e.Redactor(); err != nil {
		return nil, err
	}
	endpoint := req.Tokenizer
	if endpoint == "" {
		endpoint = baseConfig(ctx, req.Repo, base).Model.Endpoint
	}
	probe := req.TokenizerProbe
	if probe == 0 {
		probe = runner.ProbeTimeout
	}
	b := runner.NewPackBuilder(ctx, endpoint, probe, redactor, e)
	b.Budget, b.Store, b.IndexProgress = req.Budget, index, req.IndexProgress
	p, err := b.Build(ctx, t, req.Repo)
	if memo != nil {
		if merr := memo.Err(); merr != nil {
			return nil, fmt.Errorf("loading the secret rules that redact the pack: %w", merr)
		}
		if err == nil {
			memo.Save()
		}
	}
	return p, err
}

// packIndex is where req's pack keeps its Go index: req.Index, else with
// req.KeepIndex the ledger's code index, else nowhere (nil: the pack
// indexes afresh).
func (e *Engine) packIndex(ctx context.Context, req PackRequest) (codegraph.Store, error) {
	if req.Index != nil {
		return &req.Index.store, nil
	}
	if !req.KeepIndex {
		return nil, nil
	}
	note := req.Note
	if note == nil {
		note = func(string) {}
	}
	l, err := e.ledger(ctx)
	if err != nil {
		if req.TaskID != "" {
			return nil, fmt.Errorf("the history of task %s needs the ledger: %w", req.TaskID, err)
		}
		note(fmt.Sprintf("ledger unavailable (%v): indexing in memory only", err))
		return nil, nil
	}
	sl, ok := l.(*ledger.Ledger)
	if !ok {
		note("the shared ledger keeps no code index: indexing in memory only")
		return nil, nil
	}
	units := codegraph.LedgerStore{Ledger: sl}
	dir, err := sandbox.CacheDir("codegraph")
	if err != nil {
		return units, nil // no cache directory: the units alone
	}
	// The last graph and the files' hashes, read back by the next process
	// without decoding a unit (the CLI's warm pack).
	return &codegraph.DiskCache{Units: units, Dir: dir}, nil
}

// baseConfig is .bcode/config.toml at rev of the repository at dir, as
// the gate and the runner read it; the defaults when dir is not a
// repository or the file is missing or broken (a pack is still useful).
func baseConfig(ctx context.Context, dir, rev string) config.Config {
	if rev == "HEAD" {
		return headConfig(ctx, dir)
	}
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

// AgentBackend builds a task's agent (engine/agentbackend's Backend, which
// each binary injects in Options.Agent).
type AgentBackend = agent.Backend

// LedgerChoice is the user's choice of a task ledger: a shared PostgreSQL
// ledger, or the SQLite file in the state directory (the zero value).
type LedgerChoice = backend.Choice

// ResolveLedger is the user's choice of ledger, the way every command
// decides it: the flag (--ledger, "" none), else $BCODE_LEDGER, else
// ~/.config/bcode/ledger, else the SQLite file.
func ResolveLedger(flag string) (LedgerChoice, error) { return backend.Resolve(flag) }

// DefaultLedgerPath is the SQLite ledger's file when no state directory is
// given: $BCODE_STATE, else $XDG_STATE_HOME/bcode.
func DefaultLedgerPath() (string, error) { return ledger.DefaultPath() }
