package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/engine/bench/suite"
)

func init() {
	registerBench(benchSub{
		name:    "tasks",
		summary: "run catalog tasks as users run them (an agent in the sandbox), graded by hidden checks on a clean snapshot",
		run:     benchTasks,
	})
}

// benchTasksFlags are bcode bench tasks's choices.
type benchTasksFlags struct {
	root, only, split           string
	model, modelName, modelFile string
	image, work, out            string
	trials                      int
	budgets                     bench.Budgets
}

func benchTasks(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode bench tasks [--only IDS] [--split dev|heldout] [--trials N] [--model MODEL] [--model-name NAME] --out R.json", stdout, stderr)
	var f benchTasksFlags
	fs.StringVar(&f.root, "root", ".", "the bcode checkout `DIR` whose catalog (engine/bench/catalog) runs")
	fs.StringVar(&f.only, "only", "", "run only these tasks: comma-separated `IDS`")
	fs.StringVar(&f.split, "split", "", "run only the tasks of this `SPLIT`: dev or heldout (default both)")
	intFlag(fs, &f.trials, "trials", 1, 1, 100, "run each task this many times")
	fs.StringVar(&f.model, "model", suite.ModelScripted, "what answers the agent (`MODEL`): scripted (replays each task's reference), llama-server (with --model-file: started and supervised as bcode model serve runs it; without: the one at "+config.DefaultEndpoint+") or the URL of any OpenAI-compatible endpoint")
	fs.StringVar(&f.modelName, "model-name", "", "the model's `NAME` at the endpoint, recorded in the report")
	fs.StringVar(&f.modelFile, "model-file", "", "the GGUF model `FILE` llama-server serves: its SHA-256 is recorded in the report")
	fs.StringVar(&f.image, "image", config.DefaultSandboxImage, "the sandbox image `REF` (build it with bcode sandbox build)")
	fs.StringVar(&f.work, "work", "", "where each trial's repository and the run's ledger are made, and kept (`DIR`; default a new temporary directory)")
	fs.StringVar(&f.out, "out", "", "write the report to `FILE` (JSON; docs/evaluation.md)")
	intFlag(fs, &f.budgets.Attempts, "attempts", suite.DefaultBudgets.Attempts, 1, 20, "attempts per trial")
	durationFlag(fs, &f.budgets.WallClock, "wall", suite.DefaultBudgets.WallClock, time.Minute, 24*time.Hour, "wall-clock time per trial")
	intFlag(fs, &f.budgets.Tokens, "tokens", suite.DefaultBudgets.Tokens, 1000, 100_000_000, "model tokens per trial")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	o, msg := f.options()
	if msg != "" {
		return fs.usageErr("%s", msg)
	}
	return runBenchTasks(ctx, eng, f, o, stdout, stderr)
}

// options turns the flags into the run's options (all but the engine,
// the tasks and the work directory); msg is a usage error.
func (f benchTasksFlags) options() (o suite.TasksOptions, msg string) {
	if f.out == "" {
		return o, "give --out FILE: where the report goes"
	}
	if f.split != "" && f.split != string(bench.SplitDev) && f.split != string(bench.SplitHeldout) {
		return o, fmt.Sprintf("--split %q: want dev or heldout", f.split)
	}
	m, msg := f.modelChoice()
	if msg != "" {
		return o, msg
	}
	return suite.TasksOptions{Root: f.root, Trials: f.trials, Model: m, Image: f.image, Budgets: f.budgets}, ""
}

// modelChoice reads --model, --model-name and --model-file.
func (f benchTasksFlags) modelChoice() (bench.Model, string) {
	m := bench.Model{Name: f.modelName}
	switch {
	case f.model == suite.ModelScripted:
		m.Kind = suite.ModelScripted
		if f.modelName != "" || f.modelFile != "" {
			return m, "--model scripted takes no --model-name or --model-file"
		}
		return m, ""
	case f.model == suite.ModelLlamaServer:
		m.Kind, m.Endpoint = suite.ModelLlamaServer, config.DefaultEndpoint
	default:
		u, err := url.Parse(f.model)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return m, fmt.Sprintf("--model %q: want scripted, llama-server or an http(s) URL", f.model)
		}
		m.Kind, m.Endpoint = suite.ModelEndpoint, f.model
	}
	if f.modelFile != "" {
		sum, err := suite.FileSHA256(f.modelFile)
		if err != nil {
			return m, fmt.Sprintf("--model-file: %v", err)
		}
		m.File, m.SHA256 = f.modelFile, sum
	}
	return m, ""
}

// runBenchTasks selects the tasks, runs them and writes the report; the
// report file is checked writable before anything runs.
func runBenchTasks(ctx context.Context, eng *app.Engine, f benchTasksFlags, o suite.TasksOptions, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int { errorf(stderr, "bcode bench tasks", format, a...); return 1 }
	all, err := bench.LoadCatalog(f.root)
	if err != nil {
		return fail("%v", err)
	}
	var only []string
	if f.only != "" {
		only = strings.Split(f.only, ",")
	}
	if o.Tasks, err = bench.Select(all, bench.SuiteTasks, f.split, only); err != nil {
		return fail("%v", err)
	}
	if len(o.Tasks) == 0 {
		return fail("no tasks-suite task in the %s split", map[bool]string{true: "dev or heldout", false: f.split}[f.split == ""])
	}
	if err := writable(f.out); err != nil {
		return fail("the report %s cannot be written: %v", f.out, err)
	}
	if o.Work, err = workDir(f.work); err != nil {
		return fail("%v", err)
	}
	if err := eng.UseLedger(filepath.Join(o.Work, "ledger.db"), app.LedgerChoice{}); err != nil {
		return fail("%v", err)
	}
	stop, err := startModel(ctx, &o.Model, stderr)
	if err != nil {
		return fail("%v", err)
	}
	defer stop()
	fmt.Fprintf(stderr, "bcode bench tasks: %d tasks x %d trials, model %s; repositories in %s\n", len(o.Tasks), o.Trials, o.Model.Kind, o.Work)
	o.Engine, o.Log = eng, stdout
	rep, err := suite.RunTasks(ctx, o)
	if rep == nil {
		return fail("%v", err)
	}
	if werr := writeReport(f.out, rep); werr != nil {
		return fail("%v", werr)
	}
	printTasksSummary(stdout, rep, f.out)
	if err != nil {
		return fail("stopped: %v (the report holds the trials that ended)", err)
	}
	return 0
}

// workDir is dir made if missing, or a new temporary directory.
func workDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "bcode-bench-tasks-")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("--work %s: %w", dir, err)
	}
	return abs, nil
}

// printTasksSummary is the run's outcome counts.
func printTasksSummary(w io.Writer, rep *bench.Report, out string) {
	n := map[bench.Outcome]int{}
	attempts, leaks := 0, 0
	for _, r := range rep.Results {
		n[r.Outcome]++
		attempts += r.SecurityAttempts
		leaks += r.Leaks
	}
	fmt.Fprintf(w, "%d pass, %d fail, %d error of %d trials; %d security attempts, %d leaks; %d tasks skipped\n",
		n[bench.Pass], n[bench.Fail], n[bench.Error], len(rep.Results), attempts, leaks, len(rep.Skipped))
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Task, s.Reason)
	}
	for _, l := range rep.Limitations {
		fmt.Fprintf(w, "limitation: %s\n", l)
	}
	fmt.Fprintf(w, "report: %s\n", out)
}
