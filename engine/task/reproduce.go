package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// reproduction reads a --reproduce command into the oracle request the
// runner reproduces before any model call, checking that what it names
// is in the base commit. The command is never run as given.
func reproduction(ctx context.Context, repo *git.Repo, base, cmd string) (*engine.Oracle, error) {
	sels, err := verify.ParseTestCommand(cmd)
	if err != nil {
		return nil, err
	}
	o := &engine.Oracle{Command: strings.TrimSpace(cmd)}
	for _, t := range sels {
		if err := selectorInBase(ctx, repo, base, t); err != nil {
			return nil, err
		}
		o.Selectors = append(o.Selectors, engine.OracleTest{Language: t.Language, Package: t.Package, File: t.File, Name: t.Name})
	}
	return o, nil
}

// selectorInBase refuses a test file or package the base does not have.
func selectorInBase(ctx context.Context, repo *git.Repo, base string, t verify.Test) error {
	if t.Language == "python" {
		_, err := repo.ShowFile(ctx, base, t.File)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s is not in the base %.12s: commit the test first", verify.ErrTestCommand, t.File, base)
		}
		return err
	}
	if t.Package == "." {
		return nil
	}
	out, err := repo.Git(ctx, "ls-tree", "--name-only", base, "--", strings.TrimPrefix(t.Package, "./")+"/")
	if err != nil {
		return err
	}
	if !strings.Contains(string(out), "_test.go") {
		return fmt.Errorf("%w: the base %.12s has no Go test files in %s", verify.ErrTestCommand, base, t.Package)
	}
	return nil
}

// reproduceGoal is a task's goal when --reproduce gives none: made from
// the tests the command names.
func reproduceGoal(o *engine.Oracle) string {
	var names []string
	for _, t := range o.Selectors {
		switch {
		case t.Language == "go" && t.Name != ".":
			names = append(names, fmt.Sprintf("%s (-run %s)", t.Package, t.Name))
		case t.Name != "":
			names = append(names, t.Package+"::"+t.Name)
		default:
			names = append(names, t.Package)
		}
	}
	return fmt.Sprintf("Make the failing test pass without changing it: %s (reproduced with `%s`)", strings.Join(names, ", "), o.Command)
}

// Level is the verification level a task's last check reached, the one
// its base asks for, and what the next level lacks.
type Level struct {
	Reached  string `json:"reached,omitempty"`
	Required string `json:"required,omitempty"`
	Missing  string `json:"missing,omitempty"`
}

// lastLevel reads the level from the last check.finished event.
func lastLevel(events []engine.Event) Level {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind != EventCheckFinished {
			continue
		}
		var d struct {
			Level         string `json:"level"`
			LevelRequired string `json:"level_required"`
			LevelMissing  string `json:"level_missing"`
		}
		if json.Unmarshal(events[i].Data, &d) == nil {
			return Level{Reached: d.Level, Required: d.LevelRequired, Missing: d.LevelMissing}
		}
		return Level{}
	}
	return Level{}
}
