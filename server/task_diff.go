package server

import (
	"context"
	"errors"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TaskDiff answers bcode.task.diff (and bcode/taskDiff): the task's
// change, read by the engine with hardened git so no client has to run git
// on the repository itself.
func (s *Server) TaskDiff(ctx context.Context, a command.TaskDiffArgs) (command.TaskDiffResult, error) {
	return s.taskDiff(ctx, command.TaskDiff, a)
}

// taskDiffLimits are the limits of one answer, as the command contract
// states them.
var taskDiffLimits = app.ChangeLimits{FileContent: command.FileContentLimit, Content: command.ContentBudget, Diff: command.DiffLimit}

// taskDiff is TaskDiff with the name of the method or command that asked,
// for its errors.
func (s *Server) taskDiff(ctx context.Context, method string, a command.TaskDiffArgs) (command.TaskDiffResult, error) {
	if a.ID == "" {
		return command.TaskDiffResult{}, command.Required(method, "id", "the task's ID, as bcode/tasks lists it")
	}
	if a.Path != "" {
		if err := app.CheckRepoPath(a.Path); err != nil {
			return command.TaskDiffResult{}, command.FieldError(method, "path", "path must be a file of the repository, relative to its top with / between names: %v", err)
		}
	}
	t, c, err := s.app.TaskChange(ctx, a.ID, a.Path, taskDiffLimits)
	if t == nil {
		return command.TaskDiffResult{}, taskError(err)
	}
	res := command.TaskDiffResult{ID: t.ID, Branch: t.Branch, Base: t.Base, Files: []command.FileDiff{}}
	switch {
	case errors.Is(err, engine.ErrNotInChange):
		return res, command.FieldError(method, "path", "%v", err)
	case err != nil:
		return res, lsp.Errorf(lsp.CodeRequestFailed, "%v", err)
	}
	res.Base, res.Head, res.Digest, res.Diff, res.Truncated, res.Notes = c.Base, c.Head, c.Digest, c.Diff, c.Truncated, c.Notes
	for _, f := range c.Files {
		res.Files = append(res.Files, command.FileDiff{
			Path: f.Path, Status: f.Status, BaseContent: f.BaseContent, HeadContent: f.HeadContent,
			BaseSize: f.BaseSize, HeadSize: f.HeadSize, Binary: f.Binary, Omitted: f.Omitted, Note: f.Note,
		})
	}
	return res, nil
}
