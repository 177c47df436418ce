package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/verify"
)

func init() {
	register(command{
		name:    "check",
		summary: "decide whether a change is verified: its new tests fail before it and pass after it",
		run:     cmdCheck,
	})
}

// Exit codes of `bcode check`: 0 only for verified, so a script can gate on it.
const (
	exitVerified    = 0
	exitNotVerified = 1
	exitError       = 2
)

func cmdCheck(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode check [--base REV] [--head REV] [--json] [--sarif FILE] [--sandbox host|docker] [--repo DIR] [--state DIR]", stdout, stderr)
	fs.about = "Exit status: 0 verified, 1 not verified (green, failed, tampered), 2 error."
	var st stateFlags
	st.register(fs.FlagSet)
	base := fs.String("base", "", "the base revision `REV` (default: merge-base with the upstream or main branch)")
	head := fs.String("head", "", "the head revision `REV` (default: the working tree, committed or not)")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	sarif := fs.String("sarif", "", "also write the report as SARIF 2.1.0 to `FILE` (the verdict and level as the run's properties, each reason and finding a result)")
	quiet := fs.Bool("q", false, "do not print progress")
	noEvidence := fs.Bool("no-evidence", false, "skip mutation evidence (credited tests must otherwise kill a mutant of the changed code)")
	noCache := fs.Bool("no-cache", false, "run the base's suite even when the ledger keeps its results from an earlier check on the same base, toolchains, environment and settings")
	where := fs.String("sandbox", "host", "where the tests run: `host|docker`; docker for a change you have not read (the agent's sandbox: no network, no capabilities; needs the image bcode sandbox build makes)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if *where != "host" && *where != "docker" {
		return fs.usageErr("--sandbox %q: want host or docker", *where)
	}
	if err := st.use(eng); err != nil {
		errorf(stderr, "bcode check", "%v", err)
		return exitError
	}
	var progress verify.Progress = verify.NoProgress{}
	if !*quiet {
		progress = stepPrinter{w: stderr, start: time.Now()}
	}
	req := app.CheckRequest{Repo: st.repo, Base: *base, Head: *head, Progress: progress, NoEvidence: *noEvidence, NoCache: *noCache}
	if *where == "docker" {
		req.Docker = true
		req.Note = func(note string) { fmt.Fprintf(stderr, "bcode check: %s\n", shown.Line(note)) }
	}
	rep, err := eng.Check(ctx, req)
	if err != nil && rep == nil {
		errorf(stderr, "bcode check", "%v", err)
		return exitError
	}
	if err != nil {
		errorf(stderr, "bcode check", "%v", err)
	}
	if *asJSON {
		if b, err := shown.JSONIndent(rep, "", "  "); err == nil {
			stdout.Write(append(b, '\n'))
		}
	} else {
		printReport(stdout, rep)
	}
	if *sarif != "" {
		if werr := writeSARIF(*sarif, rep); werr != nil {
			errorf(stderr, "bcode check", "writing %s: %v", *sarif, werr)
			return exitError
		}
	}
	switch {
	case rep.Verdict == verify.Verified && err == nil:
		return exitVerified
	case rep.Verdict == verify.Error || err != nil:
		return exitError
	}
	return exitNotVerified
}

// stepPrinter shows progress on stderr with the time since the start.
type stepPrinter struct {
	w     io.Writer
	start time.Time
}

func (s stepPrinter) Step(format string, args ...any) {
	fmt.Fprintf(s.w, "[%5.1fs] %s\n", time.Since(s.start).Seconds(), shown.Line(fmt.Sprintf(format, args...)))
}

// printReport is the two-second read: the verdict first, then each test and
// why it did or did not earn credit, then the suites and tamper findings.
func printReport(w io.Writer, r *verify.Report) {
	fmt.Fprintf(w, "%s  %s → %s  (%d files, %.1fs, runner %s)\n",
		strings.ToUpper(string(r.Verdict)), short(r.Base), short(r.Head), r.Files, float64(r.DurationMS)/1000, r.Runner)
	for _, rs := range r.Reasons {
		fmt.Fprintf(w, "  %s\n", shown.Line(rs.Message))
	}
	printLevel(w, r)
	if len(r.Tests) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TEST\tFILE\tBASE\tHEAD\tCREDIT\tWHY")
		for _, t := range r.Tests {
			credit := "no"
			if t.Credited {
				credit = "yes"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", shown.Line(t.Name), shown.Line(t.File), t.BaseOutcome, t.HeadOutcome, credit, shown.Line(t.ReasonText))
		}
		tw.Flush()
		// Without this line a reader takes BASE for the untouched base and
		// misreads "skip skip" beside a "skipped on the head" finding.
		fmt.Fprintln(w, "  (BASE: the base commit with the change's test files laid over it)")
	} else if r.Candidates == 0 {
		fmt.Fprintln(w, "\n  tests: none is a candidate for credit (the change touches no test or test support)")
	} else {
		fmt.Fprintf(w, "\n  tests: %d candidates, none new, modified or failing on either side\n", r.Candidates)
	}
	fmt.Fprintf(w, "\n  suite: targeted %s (%d targets, %.1fs), full %s (%.1fs)\n",
		r.Suite.Targeted.Outcome, len(r.Suite.Targeted.Targets), r.Suite.Targeted.Duration.Seconds(),
		r.Suite.Full.Outcome, r.Suite.Full.Duration.Seconds())
	for _, s := range []verify.SuiteResult{r.Suite.Targeted, r.Suite.Full} {
		for i, f := range s.Failed {
			if i == 5 {
				fmt.Fprintf(w, "    … and %d more\n", len(s.Failed)-5)
				break
			}
			fmt.Fprintf(w, "    failing: %s\n", shown.Line(f))
		}
	}
	printFindings(w, "tamper findings", r.Tamper)
	printFindings(w, "infrastructure changes (beside the verdict, which the tests decide; gate.infrastructure_changes = \"block\" holds them)", r.Infrastructure)
	printFindings(w, "changed expectations (the base's version of a test fails against the change)", r.ChangedExpectations)
	printFindings(w, "not judged (bcode cannot run their tests: none of them ran)", r.Unsupported)
	if m := r.Mutants; m != nil {
		fmt.Fprintf(w, "\n  mutants: %d, %d survive, %d killed by credited tests", len(m.Mutants), m.Survived, m.CreditedKills)
		if m.Note != "" {
			fmt.Fprintf(w, " (%s)", shown.Line(m.Note))
		}
		fmt.Fprintln(w)
	}
}

// printLevel says which verification level the change reached, the one
// the base asks for, and what the next level up lacks.
func printLevel(w io.Writer, r *verify.Report) {
	if r.Level == "" {
		return
	}
	fmt.Fprintf(w, "  level: %s reached, %s required (verify.level)", r.Level, r.LevelRequired)
	if r.LevelMissing != "" {
		fmt.Fprintf(w, "; missing for %s", shown.Line(r.LevelMissing))
	}
	fmt.Fprintln(w)
	if len(r.Oracle) > 0 {
		fmt.Fprintf(w, "  oracle: %s\n", shown.Line(strings.Join(r.Oracle, ", ")))
	}
}

// printFindings lists findings under a heading, if there are any.
func printFindings(w io.Writer, heading string, fs []verify.Finding) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n  %s:\n", heading)
	for _, f := range fs {
		loc := f.Path
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
		}
		fmt.Fprintf(w, "    %s  %s  %s\n", shown.Line(f.Code), shown.Line(loc), shown.Line(f.Message))
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	if rev == "" {
		return "?"
	}
	return rev
}

// writeSARIF writes the report's SARIF log (verify.Report.SARIF) to path,
// through the output boundary: its texts come from the change.
func writeSARIF(path string, rep *verify.Report) error {
	b, err := shown.JSONIndent(rep.SARIF(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
