package app

import (
	"context"
	"errors"

	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// The commands that provide what a run needs, as task.start_failed
// events name them.
const (
	fixModel  = "bcode model serve --model FILE.gguf"
	fixDocker = "sudo systemctl start docker (or: dockerd &)"
	fixImage  = "bcode sandbox build"
	fixAgent  = "go install ./cmd/... (from bcode's checkout)"
)

// StartFailureOf says what a run that could not start is missing, from
// the error that stopped it before it took the task's lease: the one place
// that decides which sentence and which fix a surface shows.
func StartFailureOf(err error) task.StartFailure {
	f := task.StartFailure{Missing: "setup", Reason: err.Error()}
	switch {
	case errors.Is(err, runner.ErrNoModel):
		f.Missing, f.Fix = "model", fixModel
	case errors.Is(err, docker.ErrUnavailable):
		f.Missing, f.Fix = "docker", fixDocker
	case errors.Is(err, docker.ErrNoImage):
		f.Missing, f.Fix = "image", fixImage
	case errors.Is(err, agentbackend.ErrNoAgent), errors.Is(err, agentbackend.ErrAgentMismatch), errors.Is(err, ErrNoAgentBackend):
		f.Missing, f.Fix = "agent", fixAgent
	}
	return f
}

// startOrRecord builds the runner of task id; when it cannot (the run
// cannot start), it records why in the ledger (task.start_failed) before
// returning the error, so the task never waits silently.
func (e *Engine) startOrRecord(ctx context.Context, t *task.Engine, id string, o RunOptions) (*runner.Runner, error) {
	r, err := e.runnerFor(ctx, t, id, o)
	if err == nil || ctx.Err() != nil {
		return r, err
	}
	if _, terr := t.Ledger.Task(ctx, id); terr != nil {
		return nil, err // no such task: nothing to record it on
	}
	if rerr := t.RecordStartFailure(context.WithoutCancel(ctx), id, StartFailureOf(err)); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	return nil, err
}
