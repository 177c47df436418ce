package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/engine/bench/suite"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	registerBench(benchSub{
		name:    "verify",
		summary: "the verify suite: labelled changes through the gate, graded by their labels; writes a report",
		run:     cmdBenchVerify,
	})
}

func cmdBenchVerify(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode bench verify --out FILE [--split dev|heldout|all] [--trials N] [--only IDS] [--root DIR]", stdout, stderr)
	fs.about = `Puts each verify task of the catalog (a labelled change: a real commit or a variant of one) through
the gate, as bcode check runs it, and grades the verdict against the label: pass when they agree, fail
when not (the detail says the verdict and why), error when no verdict came. Writes the report (JSON,
docs/evaluation.md) to --out; bcode bench scorecard reads it.

Exit status: 0 every trial passed, 1 some failed or erred, 2 usage or the run could not start.`
	out := fs.String("out", "", "write the report to `FILE` (required)")
	split := fs.String("split", "dev", "which tasks: `dev|heldout|all`")
	trials := fs.Int("trials", 1, "run each task `N` times")
	only := fs.String("only", "", "run only these task `IDS` (comma-separated)")
	rootFlag := fs.String("root", "", "the bcode checkout whose catalog to read, `DIR` (default: the checkout around the working directory)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	switch {
	case *out == "":
		return fs.usageErr("--out FILE is required: where the report goes")
	case *split != "dev" && *split != "heldout" && *split != "all":
		return fs.usageErr("--split %q: want dev, heldout or all", *split)
	case *trials < 1:
		return fs.usageErr("--trials %d: want 1 or more", *trials)
	}
	if err := writable(*out); err != nil {
		return fs.usageErr("--out %s: %v", *out, err)
	}
	root, err := benchRoot(*rootFlag)
	if err != nil {
		return fs.usageErr("%v", err)
	}
	var ids []string
	if *only != "" {
		ids = strings.Split(*only, ",")
	}
	o := suite.VerifyOptions{Root: root, Split: *split, Trials: *trials, Only: ids, Progress: func(r bench.Result) {
		fmt.Fprintf(stderr, "  %-55s trial %d  %-5s %6.1fs  %s\n", shown.Line(r.Task), r.Trial, r.Outcome, r.Seconds, shown.Line(r.Detail))
	}}
	rep, err := suite.RunVerify(ctx, eng, o)
	if rep == nil {
		errorf(stderr, "bcode bench verify", "%v", err)
		if errors.Is(err, bench.ErrCatalog) || errors.Is(err, suite.ErrVerify) {
			return exitUsage
		}
		return 1
	}
	if werr := writeReport(*out, rep); werr != nil {
		errorf(stderr, "bcode bench verify", "writing %s: %v", *out, werr)
		return exitUsage
	}
	if err != nil {
		errorf(stderr, "bcode bench verify", "stopped: %v (the report has the trials that ended)", err)
		return 1
	}
	return summarizeVerify(stdout, rep, *out)
}

// writable says why a report could not be written to path, before a run
// that would otherwise be lost at its end.
func writable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("its directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	return nil
}

// writeReport writes rep as indented JSON, through a temporary file so a
// failed write never leaves half a report.
func writeReport(path string, rep *bench.Report) error {
	b, err := shown.JSONIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// summarizeVerify prints the counts and returns the exit status.
func summarizeVerify(w io.Writer, rep *bench.Report, out string) int {
	n := map[bench.Outcome]int{}
	for _, r := range rep.Results {
		n[r.Outcome]++
	}
	fmt.Fprintf(w, "verify: %d trials of %d tasks: %d pass, %d fail, %d error; %d skipped\n",
		len(rep.Results), len(rep.Tasks)-len(rep.Skipped), n[bench.Pass], n[bench.Fail], n[bench.Error], len(rep.Skipped))
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "  skipped %s: %s\n", shown.Line(s.Task), shown.Line(s.Reason))
	}
	fmt.Fprintf(w, "report: %s\n", out)
	if n[bench.Fail]+n[bench.Error] > 0 {
		return 1
	}
	return 0
}
