package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	registerBench(benchSub{
		name:    "catalog",
		summary: "list the catalog's tasks with their counts; --check refuses what is unsound",
		run:     cmdBenchCatalog,
	})
}

func cmdBenchCatalog(_ context.Context, _ *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode bench catalog [--check] [--json] [--before DATE] [--root DIR]", stdout, stderr)
	fs.about = `Lists every task of the catalog (engine/bench/catalog, docs/evaluation.md "The catalog"): id, group,
split, language, provenance and its date, pin, capability; then the counts per group and split, and of
tasks public before a model's publication date (--before).

Exit status: 0 ok, 1 problems (--check names each), 2 usage.`
	check := fs.Bool("check", false, "refuse what is unsound: pins, ids, groups, splits, fixtures, checks, a hidden file in what the agent sees")
	asJSON := fs.Bool("json", false, "print the tasks, counts and problems as one JSON object")
	before := fs.String("before", "", "also count the tasks public before `DATE` (YYYY-MM-DD: the model's publication date)")
	rootFlag := fs.String("root", "", "the bcode checkout whose catalog to read, `DIR` (default: the checkout around the working directory)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if _, err := bench.Count(nil, *before); err != nil {
		return fs.usageErr("--before %q: want YYYY-MM-DD", *before)
	}
	root, err := benchRoot(*rootFlag)
	if err != nil {
		return fs.usageErr("%v", err)
	}
	tasks, err := bench.LoadCatalog(root)
	if err != nil {
		errorf(stderr, "bcode bench catalog", "%v", err)
		return 1
	}
	counts, err := bench.Count(tasks, *before)
	if err != nil {
		return fs.usageErr("--before %q: want YYYY-MM-DD", *before)
	}
	var problems []bench.Problem
	if *check {
		problems = bench.CheckCatalog(root, tasks)
	}
	if *asJSON {
		out := struct {
			Tasks    []bench.Task    `json:"tasks"`
			Counts   bench.Counts    `json:"counts"`
			Problems []bench.Problem `json:"problems,omitempty"`
		}{tasks, counts, problems}
		b, err := shown.JSONIndent(out, "", "  ")
		if err != nil {
			errorf(stderr, "bcode bench catalog", "%v", err)
			return 1
		}
		stdout.Write(append(b, '\n'))
	} else {
		printCatalog(stdout, tasks, counts)
	}
	return reportProblems(stdout, stderr, *check, problems)
}

func reportProblems(stdout, stderr io.Writer, checked bool, problems []bench.Problem) int {
	if !checked {
		return 0
	}
	for _, p := range problems {
		errorf(stderr, "bcode bench catalog", "%s", p.String())
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "bcode bench catalog: %d problems\n", len(problems))
		return 1
	}
	fmt.Fprintln(stderr, "bcode bench catalog: check passed")
	return 0
}

// printCatalog is the table of tasks, then the counts.
func printCatalog(w io.Writer, tasks []bench.Task, c bench.Counts) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tGROUP\tSPLIT\tLANG\tPROVENANCE\tDATE\tPINNED\tCAPABILITY")
	for _, t := range tasks {
		pinned := t.Pinned
		if len(pinned) == 40 {
			pinned = pinned[:12]
		}
		if pinned == "" {
			pinned = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shown.Line(t.ID), shown.Line(string(t.Group)), shown.Line(string(t.Split)),
			shown.Line(t.Language), shown.Line(t.Provenance.Kind), shown.Line(t.Provenance.Date), shown.Line(pinned), shown.Line(t.Capability))
	}
	tw.Flush()
	fmt.Fprintln(w)
	printCounts(w, c)
}

func printCounts(w io.Writer, c bench.Counts) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "GROUP\tDEV\tHELDOUT\tTOTAL"
	if c.Before != "" {
		header += "\tPUBLIC BEFORE " + c.Before
	}
	fmt.Fprintln(tw, header)
	for _, g := range bench.Groups {
		dev, held := c.Groups[g][bench.SplitDev], c.Groups[g][bench.SplitHeldout]
		line := fmt.Sprintf("%s\t%d\t%d\t%d", g, dev, held, dev+held)
		if c.Before != "" {
			line += fmt.Sprintf("\t%d", c.PublicBefore[g])
		}
		fmt.Fprintln(tw, line)
	}
	line := fmt.Sprintf("all\t%d\t%d\t%d", c.Splits[bench.SplitDev], c.Splits[bench.SplitHeldout], c.Total)
	if c.Before != "" {
		n := 0
		for _, v := range c.PublicBefore {
			n += v
		}
		line += fmt.Sprintf("\t%d", n)
	}
	fmt.Fprintln(tw, line)
	tw.Flush()
	fmt.Fprintf(w, "\nprovenance: %d commit, %d issue, %d synthetic\n", c.Provenance["commit"], c.Provenance["issue"], c.Provenance["synthetic"])
	if c.Before == "" {
		fmt.Fprintln(w, "public before a model's publication date: give --before YYYY-MM-DD")
	}
}

// benchModule is the module whose checkout holds the catalog.
const benchModule = "github.com/bcode-dev/bcode"

// benchRoot is the bcode checkout to read: dir when given, else the one
// around the working directory.
func benchRoot(dir string) (string, error) {
	if dir != "" {
		if !isBcodeRoot(dir) {
			return "", fmt.Errorf("--root %s: not a bcode checkout (no go.mod declaring module %s)", dir, benchModule)
		}
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isBcodeRoot(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("not inside a bcode checkout: run from one or give --root DIR")
		}
	}
}

func isBcodeRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == benchModule {
			return true
		}
	}
	return false
}
