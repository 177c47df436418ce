package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/verify"
)

func init() {
	register(command{
		name:    "evidence",
		summary: "show the mutants of the changed lines that no test notices",
		run:     cmdEvidence,
	})
}

// Exit codes of `bcode evidence`: CI fails on survivors (1) and on
// anything that kept the run from judging every mutant (2).
const (
	evidenceClean     = 0
	evidenceSurvivors = 1
	evidenceError     = 2
)

func cmdEvidence(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode evidence [--base REV] [--head REV] [--json|--sarif|--github] [--mutation-report FILE] [--repo DIR] [--reach] [--workers N]", stdout, stderr)
	fs.about = "Exit status: 0 no mutant survives, 1 some survive, 2 error (or mutants left without a verdict)."
	repoDir := fs.String("repo", ".", "the git checkout `DIR` to work on")
	base := fs.String("base", "", "the base revision `REV` (default: merge-base with the upstream or main branch)")
	head := fs.String("head", "", "the head revision `REV` (default: the working tree, committed or not)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	asSARIF := fs.Bool("sarif", false, "print SARIF 2.1.0 (for code-scanning UIs)")
	asGitHub := fs.Bool("github", false, "print GitHub Actions workflow annotations")
	mutationReport := fs.String("mutation-report", "", "also write a mutation-testing-report-schema JSON file to `FILE` (Stryker's HTML viewer reads it)")
	reach := fs.Bool("reach", false, "also mutate the functions the change's new or modified tests cover")
	var workers int
	intFlag(fs, &workers, "workers", 0, 0, maxWorkers, "parallel mutant runs; 0: the number of CPUs")
	overlay := fs.Bool("overlay", false, "build every mutant separately instead of one schema per package (slow; for comparison)")
	quiet := fs.Bool("q", false, "do not print progress")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode evidence", format, a...)
		return evidenceError
	}
	formats := 0
	for _, b := range []bool{*asJSON, *asSARIF, *asGitHub} {
		if b {
			formats++
		}
	}
	if formats > 1 {
		return fs.usageErr("--json, --sarif and --github are exclusive: pick one")
	}

	var progress verify.Progress = verify.NoProgress{}
	if !*quiet {
		progress = stepPrinter{w: stderr, start: time.Now()}
	}
	req := app.EvidenceRequest{Repo: *repoDir, Base: *base, Head: *head, Options: app.EvidenceOptions{Workers: workers, Reach: *reach, Overlay: *overlay}}
	res, err := eng.Evidence(ctx, req, progress)
	if res != nil {
		for _, note := range res.Notes {
			fmt.Fprintln(stderr, "bcode evidence:", shown.Line(note))
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, app.ErrRedBaseline):
			return fail("%v\nthe code must pass its own tests before mutants can be judged; fix them (or run `bcode check`) first", err)
		case ctx.Err() != nil:
			return fail("interrupted")
		default:
			return fail("%v", err)
		}
	}
	rep := res.Report

	format := app.EvidenceText
	switch {
	case *asJSON:
		format = app.EvidenceJSON
	case *asSARIF:
		format = app.EvidenceSARIF
	case *asGitHub:
		format = app.EvidenceGitHub
	}
	err = app.WriteEvidence(stdout, format, rep)
	if err == nil && format == app.EvidenceGitHub {
		err = appendStepSummary(rep)
	}
	if err != nil {
		return fail("writing the report: %v", err)
	}
	if *mutationReport != "" {
		if err := writeFileWith(*mutationReport, rep, app.EvidenceMutationReport); err != nil {
			return fail("writing %s: %v", *mutationReport, err)
		}
	}
	if formats > 0 {
		// Machine formats keep stdout clean; problems still reach a person.
		for _, e := range rep.Errors {
			fmt.Fprintf(stderr, "bcode evidence: %s\n", shown.Line(e))
		}
	}
	switch {
	case rep.Stats.Verdicts[verify.MutantSurvived] > 0:
		return evidenceSurvivors
	case len(rep.Errors) > 0 || rep.Stats.Verdicts[verify.MutantNoVerdict] > 0:
		return evidenceError
	}
	return evidenceClean
}
