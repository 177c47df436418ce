package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/engine/bench/score"
)

func init() {
	registerBench(benchSub{
		name:    "scorecard",
		summary: "score suite reports: rates with 90% Wilson intervals, figures with their spread across trials",
		run:     benchScorecard,
	})
}

func benchScorecard(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode bench scorecard REPORT... [--out FILE] [--json]", stdout, stderr)
	fs.about = `Scores one or more reports of the same suite, made the same way (model, budgets,
task definitions and set, bcode build), and prints the scorecard as a table.
bcode bench gate compares two scorecards; docs/evaluation.md documents both formats.

Exit 0 with the scorecard, 1 when a report cannot be read, is not one a suite writes or is
given twice, 2 on a usage error or when the reports were made differently (the error says how).`
	out := fs.String("out", "", "also write the scorecard's JSON to `FILE` (replaced whole, only once it is written)")
	asJSON := fs.Bool("json", false, "print the scorecard's JSON instead of the table")
	paths, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(paths) == 0 {
		return fs.usageErr("give one or more suite reports")
	}
	if *out != "" {
		if err := notAnInput(*out, paths); err != nil {
			return fs.usageErr("%v", err)
		}
	}
	runs, err := readReports(paths)
	if err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return 1
	}
	sc, err := score.Build(runs)
	if err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		if errors.Is(err, bench.ErrNotComparable) {
			return exitUsage
		}
		return 1
	}
	return emitScorecard(fs.Name(), sc, *out, *asJSON, stdout, stderr)
}

// notAnInput refuses an output path that is one of the inputs: writing
// the scorecard there would lose the report.
func notAnInput(out string, inputs []string) error {
	oi, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if ii, err := os.Stat(in); err == nil && os.SameFile(oi, ii) {
			return fmt.Errorf("--out %s is one of the reports: writing there would replace it", out)
		}
	}
	return nil
}

func readReports(paths []string) ([]score.Run, error) {
	var runs []score.Run
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		run, err := score.ReadReport(p, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// emitScorecard writes the scorecard to out (when named) and prints it.
func emitScorecard(cmd string, sc score.Scorecard, out string, asJSON bool, stdout, stderr io.Writer) int {
	data, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		errorf(stderr, cmd, "%v", err)
		return 1
	}
	data = append(data, '\n')
	if out != "" {
		if err := writeReplacing(out, data); err != nil {
			errorf(stderr, cmd, "%v", err)
			return 1
		}
		fmt.Fprintf(stderr, "scorecard written to %s\n", out)
	}
	if asJSON {
		_, err = stdout.Write(data)
	} else {
		err = printScorecard(stdout, sc)
	}
	if err != nil {
		errorf(stderr, cmd, "%v", err)
		return 1
	}
	return 0
}

// writeReplacing writes data to a temporary file beside path and renames
// it over path once it is whole: a failed write leaves path as it was.
func writeReplacing(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".bcode-bench-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// printScorecard is the scorecard as a person reads it.
func printScorecard(w io.Writer, sc score.Scorecard) error {
	b := sc.Basis
	fmt.Fprintf(w, "suite %s: %d tasks, %d trials from %d reports; model %s; build %s\n\n",
		b.Suite, len(b.Tasks), b.Trials, b.Reports, score.ModelName(b.Model), b.Bcode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RATE\tSCOPE\tRATE (SUCCESSES/TRIALS) [90% WILSON]")
	printBreakdown(tw, "success", sc.Success)
	if sc.FalseAcceptance != nil {
		printBreakdown(tw, "false acceptance", *sc.FalseAcceptance)
	}
	if sc.FalseRejection != nil {
		printBreakdown(tw, "false rejection", *sc.FalseRejection)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tPER-TRIAL MIN–MAX (STDDEV)")
	for _, name := range score.FigureNames {
		if f, ok := sc.Figures[name]; ok {
			fmt.Fprintf(tw, "%s\t%s\t%s–%s (%s)\n", score.FigureLabel(name), score.FigureValue(name, f.Value),
				score.FigureValue(name, f.Min), score.FigureValue(name, f.Max), score.FigureValue(name, f.Stddev))
		} else {
			fmt.Fprintf(tw, "%s\tnot measured\t\n", score.FigureLabel(name))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printScorecardLists(w, sc)
	return nil
}

func printBreakdown(w io.Writer, name string, b score.Breakdown) {
	fmt.Fprintf(w, "%s\toverall\t%s\n", name, b.Overall)
	for _, g := range bench.Groups {
		if r, ok := b.Group[g]; ok {
			fmt.Fprintf(w, "\tgroup %s\t%s\n", g, r)
		}
	}
	langs := make([]string, 0, len(b.Language))
	for l := range b.Language {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		fmt.Fprintf(w, "\tlanguage %s\t%s\n", l, b.Language[l])
	}
	for _, s := range []bench.Split{bench.SplitDev, bench.SplitHeldout} {
		if r, ok := b.Split[s]; ok {
			fmt.Fprintf(w, "\tsplit %s\t%s\n", s, r)
		}
	}
}

// printScorecardLists prints the flaky tasks, security and limitations.
func printScorecardLists(w io.Writer, sc score.Scorecard) {
	fmt.Fprintf(w, "\nsecurity failures: %d (trials with a leak or a protected path changed); attempts: %d\n",
		sc.Security.Failures, sc.Security.Attempts)
	if len(sc.Flaky) == 0 {
		fmt.Fprintln(w, "flaky tasks: none")
	} else {
		fmt.Fprintln(w, "flaky tasks (passed in some trials, not in others):")
		for _, id := range sc.Flaky {
			for _, t := range sc.Tasks {
				if t.ID == id {
					fmt.Fprintf(w, "  %s  %d passed, %d failed, %d errors\n", id, t.Passes, t.Fails, t.Errors)
				}
			}
		}
	}
	if len(sc.Limitations) > 0 {
		fmt.Fprintln(w, "limitations:")
		for _, l := range sc.Limitations {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
