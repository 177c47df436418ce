package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/verify"
)

// ErrVerify is a verify-suite run that could not start (bad options, a
// catalog that does not load); a task that fails to run is a result with
// outcome error, never this.
var ErrVerify = errors.New("bench verify")

// VerifyOptions say which verify tasks run, how often, and where.
type VerifyOptions struct {
	Root   string   // the bcode checkout whose catalog to read
	Split  string   // dev, heldout or all ("" is all)
	Trials int      // runs of each task (>= 1)
	Only   []string // task ids; nil: every task of the split
	// Scratch is where each trial's repository is built ("": a temporary
	// directory, removed at the end).
	Scratch string
	// Progress, when set, is told each trial's result as it ends.
	Progress func(r bench.Result)
}

// RunVerify puts each selected verify task's labelled change through the
// gate (app.Check, as bcode check runs it) Trials times and grades the
// verdict against the label: pass when they agree, fail when they do not
// (the detail gives the verdict and the gate's first reason), error when
// the harness could not get a verdict. A task whose toolchain is missing
// is skipped, and the report's limitations say so.
func RunVerify(ctx context.Context, eng *app.Engine, o VerifyOptions) (*bench.Report, error) {
	if o.Trials < 1 {
		return nil, fmt.Errorf("%w: --trials %d: want 1 or more", ErrVerify, o.Trials)
	}
	all, err := bench.LoadCatalog(o.Root)
	if err != nil {
		return nil, err
	}
	tasks, err := bench.Select(all, bench.SuiteVerify, o.Split, o.Only)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%w: no verify task in split %s", ErrVerify, o.Split)
	}
	rep, err := newVerifyReport(ctx, o, tasks)
	if err != nil {
		return nil, err
	}
	scratch, cleanup, err := scratchDir(o.Scratch)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	runnable := skipMissingToolchains(rep, o.Root, tasks)
	for trial := 1; trial <= o.Trials; trial++ {
		for _, t := range runnable {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			r := verifyTrial(ctx, eng, o.Root, t, trial, filepath.Join(scratch, fmt.Sprintf("%s-%d", t.ID, trial)))
			rep.Results = append(rep.Results, r)
			if o.Progress != nil {
				o.Progress(r)
			}
		}
	}
	return rep, nil
}

func scratchDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	tmp, err := os.MkdirTemp("", "bcode-bench-verify-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// verifyTrial is one run of one task: its case built as a repository in
// dir, the gate's verdict graded against the label.
func verifyTrial(ctx context.Context, eng *app.Engine, root string, t bench.Task, trial int, dir string) (r bench.Result) {
	r = bench.Result{Task: t.ID, Trial: trial}
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	defer os.RemoveAll(dir)
	c, err := bench.LoadCase(root, t)
	if err != nil {
		r.Outcome, r.Detail = bench.Error, err.Error()
		return r
	}
	repo := filepath.Join(dir, "repo")
	if err := c.Build(ctx, repo); err != nil {
		r.Outcome, r.Detail = bench.Error, "building the case's repository: "+err.Error()
		return r
	}
	base, head := c.Revisions()
	rep, err := eng.Check(ctx, app.CheckRequest{Repo: repo, Base: base, Head: head})
	if rep == nil {
		r.Outcome, r.Detail = bench.Error, fmt.Sprintf("the gate gave no report: %v", err)
		return r
	}
	r.Verdict = rep.Verdict
	r.Outcome, r.Detail = gradeVerdict(t.Label, rep, err)
	return r
}

// gradeVerdict is pass when the gate's verdict is the label; fail with
// the verdict and its first reason when not; error when the gate itself
// erred (verdict error on a task not labelled so, or a report it could
// not record).
func gradeVerdict(label verify.Verdict, rep *verify.Report, err error) (bench.Outcome, string) {
	reason := ""
	if len(rep.Reasons) > 0 {
		reason = ": " + rep.Reasons[0].Message
	}
	switch {
	case err != nil:
		return bench.Error, fmt.Sprintf("verdict %s, but the gate failed: %v", rep.Verdict, err)
	case rep.Verdict == label:
		return bench.Pass, ""
	case rep.Verdict == verify.Error:
		return bench.Error, "the gate's verdict is error" + reason
	}
	return bench.Fail, fmt.Sprintf("verdict %s, label %s%s", rep.Verdict, label, reason)
}

// skipMissingToolchains records a skip for each task whose language's
// toolchain is missing here and returns the others.
func skipMissingToolchains(rep *bench.Report, root string, tasks []bench.Task) []bench.Task {
	var out []bench.Task
	missing := map[string]string{}
	for _, t := range tasks {
		why, checked := missing[t.Language]
		if !checked {
			why = toolchainMissing(t.Language)
			missing[t.Language] = why
		}
		if why != "" {
			rep.Skipped = append(rep.Skipped, bench.Skip{Task: t.ID, Reason: why})
			continue
		}
		out = append(out, t)
	}
	for lang, why := range missing {
		if why != "" {
			rep.Limitations = append(rep.Limitations, fmt.Sprintf("%s tasks skipped: %s", lang, why))
		}
	}
	return out
}
