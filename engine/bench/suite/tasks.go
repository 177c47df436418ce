package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/verify"
)

// The tasks suite runs each catalog task the way a user runs one: a fresh
// repository whose base configuration names the model (behind a
// recording proxy), the sandbox image and the budgets; the task created
// and run through engine/app with the agent backend the binary injects
// (bcode-agent in the Docker sandbox); then graded on a clean snapshot
// (tasksgrade.go) and, for security tasks, from the agent's recorded
// calls (taskssecurity.go).

// Model kinds a tasks run can use.
const (
	ModelScripted    = "scripted"     // the scripted server replays each task's reference
	ModelEndpoint    = "endpoint"     // any OpenAI-compatible endpoint
	ModelLlamaServer = "llama-server" // a local llama-server, as bcode model serve runs it
)

// ErrTasksOptions: a tasks run was asked for something it cannot do.
var ErrTasksOptions = errors.New("tasks")

// TasksOptions say which tasks run, how often, against what.
type TasksOptions struct {
	// Engine runs the tasks: opened with the agent backend (the CLI's is
	// bcode-agent in the Docker sandbox) and a ledger of its own.
	Engine *app.Engine
	Tasks  []bench.Task
	// Fixture reads a task's fixture; nil: bench.LoadFixture under Root.
	Fixture func(bench.Task) (bench.Fixture, error)
	Root    string
	Trials  int
	Model   bench.Model // Kind is one of the Model* constants
	Image   string      // the sandbox image the base configuration names
	Budgets bench.Budgets
	// Work is where each trial's repository is made (a directory that
	// exists); trials leave their repositories there for inspection.
	Work string
	// Script is the scripted model's script for one trial; nil:
	// ScriptFor.
	Script func(bench.Task, bench.Fixture, Canaries) []modeltest.Step
	// ParseCheck reads a task's check command into the tests it selects;
	// nil: bench.ParseCheck (go test, pytest, cargo test, node --test).
	ParseCheck func(string) ([]verify.Test, error)
	// Log gets one line per trial as it ends; nil: none.
	Log io.Writer
}

// DefaultBudgets are a trial's limits unless the run sets others.
var DefaultBudgets = bench.Budgets{Attempts: 1, WallClock: 15 * time.Minute, Tokens: 200_000}

// RunTasks runs every task o.Trials times and returns the report; the
// canaries' values never appear in it. A trial the harness could not run
// is an error result saying why; RunTasks itself fails only on options
// it cannot use.
func RunTasks(ctx context.Context, o TasksOptions) (*bench.Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	rep := newTasksReport(o)
	for _, t := range o.Tasks {
		fx, err := o.fixture(t)
		if err != nil {
			rep.Skipped = append(rep.Skipped, bench.Skip{Task: t.ID, Reason: err.Error()})
			continue
		}
		for n := 1; n <= o.Trials; n++ {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			r := o.trial(ctx, t, fx, n)
			rep.Results = append(rep.Results, r)
			if o.Log != nil {
				fmt.Fprintf(o.Log, "%s #%d: %s in %.1fs, %d tokens, %d model calls, %d security attempts, %d leaks %s\n",
					r.Task, r.Trial, r.Outcome, r.Seconds, r.Tokens, r.ModelCalls, r.SecurityAttempts, r.Leaks, r.Detail)
			}
		}
	}
	return rep, nil
}

func (o *TasksOptions) check() error {
	switch {
	case o.Engine == nil:
		return fmt.Errorf("%w: no engine", ErrTasksOptions)
	case o.Trials < 1:
		return fmt.Errorf("%w: %d trials: run each task at least once", ErrTasksOptions, o.Trials)
	case o.Image == "":
		return fmt.Errorf("%w: no sandbox image named (build one with bcode sandbox build)", ErrTasksOptions)
	case o.Work == "":
		return fmt.Errorf("%w: no work directory", ErrTasksOptions)
	}
	switch o.Model.Kind {
	case ModelScripted:
	case ModelEndpoint, ModelLlamaServer:
		if o.Model.Endpoint == "" {
			return fmt.Errorf("%w: model %s: no endpoint", ErrTasksOptions, o.Model.Kind)
		}
	default:
		return fmt.Errorf("%w: model kind %q: want %s, %s or %s", ErrTasksOptions, o.Model.Kind, ModelScripted, ModelEndpoint, ModelLlamaServer)
	}
	if o.Budgets == (bench.Budgets{}) {
		o.Budgets = DefaultBudgets
	}
	return nil
}

func (o *TasksOptions) fixture(t bench.Task) (bench.Fixture, error) {
	if t.Suite != "" && t.Suite != bench.SuiteTasks {
		return bench.Fixture{}, fmt.Errorf("a %s-suite task", t.Suite)
	}
	if o.Fixture != nil {
		return o.Fixture(t)
	}
	return bench.LoadFixture(o.Root, t)
}

// unsafeName are the characters a task id may not bring into a
// directory name.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// trialDir is a new directory for one trial's repository.
func (o *TasksOptions) trialDir(t bench.Task, n int) (string, error) {
	return os.MkdirTemp(o.Work, fmt.Sprintf("%s-%d-*", unsafeName.ReplaceAllString(t.ID, "_"), n))
}
