package task

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// CreateInput is what a task is created from.
type CreateInput struct {
	Repo string // a directory inside the user's checkout
	Goal string
	// Selection is optional: File, StartLine and EndLine as the user gives
	// them; Create fills in the text and its hash.
	Selection *engine.Selection
	Base      string   // a revision; "" is the checkout's HEAD
	Criteria  []string // acceptance criteria, in words
	// Reproduce is a test command (`go test ./pkg -run TestX`, `python3
	// -m pytest tests/test_x.py::test_y`): the runner runs its tests on
	// the base before any model call and pins those that fail as the
	// task's oracle (engine.Oracle). Goal may then be empty.
	Reproduce string
}

// maxSelection bounds the file a selection is read from.
const maxSelection = 8 << 20

// Create records a new task: the goal, the selection with its text (read
// from the checkout now) and its SHA-256, the base commit, the criteria,
// and budgets from the base commit's .bcode/config.toml (the head's never
// counts, as in the gate). It appends task.created and returns the task.
func (e *Engine) Create(ctx context.Context, in CreateInput) (*engine.Task, error) {
	goal := strings.TrimSpace(in.Goal)
	if goal == "" && strings.TrimSpace(in.Reproduce) == "" {
		return nil, errors.New("the task has no goal: say in words what should change")
	}
	repo, err := git.Open(ctx, in.Repo)
	if err != nil {
		return nil, err
	}
	rev := in.Base
	if rev == "" {
		rev = "HEAD"
	}
	base, err := repo.Resolve(ctx, rev)
	if err != nil {
		if in.Base == "" {
			return nil, fmt.Errorf("the checkout has no commit yet (commit something, or pass --base): %w", err)
		}
		return nil, fmt.Errorf("--base %s: %w", in.Base, err)
	}
	cfg, err := BaseConfig(ctx, repo, base)
	if err != nil {
		return nil, err
	}
	var oracle *engine.Oracle
	if strings.TrimSpace(in.Reproduce) != "" {
		if oracle, err = reproduction(ctx, repo, base, in.Reproduce); err != nil {
			return nil, err
		}
		if goal == "" {
			goal = reproduceGoal(oracle)
		}
	}
	t := &engine.Task{
		Repo: repo.Dir, Goal: goal, Base: base,
		Budgets: engine.Budgets{
			MaxAttempts: cfg.Task.MaxAttempts, MaxTurns: cfg.Task.MaxTurns,
			MaxTokens: cfg.Task.MaxTokens, WallClock: cfg.Task.WallClock.Duration,
		},
	}
	for _, c := range in.Criteria {
		if c = strings.TrimSpace(c); c != "" {
			t.Criteria = append(t.Criteria, c)
		}
	}
	if in.Selection != nil {
		sel, err := readSelection(repo.Dir, *in.Selection)
		if err != nil {
			return nil, err
		}
		if err := inBase(ctx, repo, base, sel.File); err != nil {
			return nil, err
		}
		t.Selection = sel
	}
	// The oracle goes in with the task, in one transaction: a runner that
	// claims the task sees what to reproduce first.
	t.Reproduce = oracle
	if err := e.Ledger.CreateTask(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// ErrSelectionNotInBase is engine.ErrSelectionNotInBase: the selected file
// is not in the task's base commit.
var ErrSelectionNotInBase = engine.ErrSelectionNotInBase

// inBase refuses a selection whose file the base commit does not hold: the
// task's worktree is the base, so the agent would never see the selected
// code. The error says what to do.
func inBase(ctx context.Context, repo *git.Repo, base, file string) error {
	_, err := repo.ShowFile(ctx, base, file)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is not in %.12s (a new file, not committed yet): commit it first (git add %s && git commit), then create the task again; or pass --base with a commit that has it", ErrSelectionNotInBase, file, base, file)
	}
	if err != nil {
		return fmt.Errorf("selection: %w", err)
	}
	return nil
}

// BaseConfig reads .bcode/config.toml at the base commit of repo
// (config.FromBase), or the defaults when the base has none. A run reads
// it once and passes it down (runner.Runner.Config).
func BaseConfig(ctx context.Context, repo *git.Repo, base string) (config.Config, error) {
	return config.FromBase(func(p string) ([]byte, error) { return repo.ShowFile(ctx, base, p) })
}

// readSelection reads the selected lines through a confined root (no
// symlink leads out of the checkout) and hashes them, so a later reader can
// tell whether the code still says what the user selected.
func readSelection(repo string, r engine.Selection) (*engine.Selection, error) {
	file := filepath.ToSlash(r.File)
	if filepath.IsAbs(r.File) {
		rel, err := filepath.Rel(repo, r.File)
		if err != nil {
			return nil, fmt.Errorf("selection: %s is outside the repository %s", r.File, repo)
		}
		file = filepath.ToSlash(rel)
	}
	file = path.Clean(file)
	if file == ".." || strings.HasPrefix(file, "../") || file == "." {
		return nil, fmt.Errorf("selection: %s is outside the repository %s", r.File, repo)
	}
	if r.StartLine < 1 || r.EndLine < r.StartLine {
		return nil, fmt.Errorf("selection %s:%d-%d: want 1 <= L1 <= L2", file, r.StartLine, r.EndLine)
	}
	data, err := sandbox.ReadFile(repo, file, maxSelection)
	if err != nil {
		return nil, fmt.Errorf("selection: reading %s: %w", file, err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if r.EndLine > len(lines) {
		return nil, fmt.Errorf("selection %s:%d-%d: the file has only %d lines", file, r.StartLine, r.EndLine, len(lines))
	}
	text := strings.Join(lines[r.StartLine-1:r.EndLine], "")
	sum := sha256.Sum256([]byte(text))
	return &engine.Selection{File: file, StartLine: r.StartLine, EndLine: r.EndLine, Text: text, SHA256: hex.EncodeToString(sum[:])}, nil
}
