package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"time"

	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/sandbox"
)

// newTasksReport is the report of a tasks run before its results: what
// it takes to reproduce the run and to refuse comparing it with another.
func newTasksReport(o TasksOptions) *bench.Report {
	rep := &bench.Report{
		Suite:      bench.SuiteTasks,
		Bcode:      BcodeBuild(),
		Model:      o.Model,
		Toolchains: ProbeToolchains(context.Background()),
		TasksHash:  bench.TasksHash(o.Tasks),
		Fixtures:   map[string]string{},
		Budgets:    o.Budgets,
		Trials:     o.Trials,
		Started:    time.Now().UTC(),
		Load:       sandbox.ReadLoad().Avg1,
		Tasks:      o.Tasks,
		Results:    []bench.Result{},
	}
	for _, t := range o.Tasks {
		if sum, err := bench.FixtureHash(o.Root, t); err == nil {
			rep.Fixtures[t.ID] = sum
		}
	}
	if o.Model.Scripted() {
		rep.Limitations = append(rep.Limitations, "scripted model: each task's reference solution replayed as tool calls (security tasks: an agent that follows the injection); the run tests the harness and the grading, not a model")
	}
	return rep
}

// FileSHA256 is the SHA-256 of a file's bytes.
func FileSHA256(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
