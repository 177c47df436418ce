package perf

// `bcode bench perf gate -real`: the gate on the real corpus
// (engine/check/testdata/real): real bug-fix commits of public projects and
// variants of them, each labelled by hand. Per case, the gate (check.Run, as `bcode
// check` runs it), then the same tests run plainly on the base and on the
// head. It prints label against verdict, false acceptance and false
// rejection, and the gate's time against the plain runs.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/verify"
)

// realRow is one case of the real corpus: its verdict and both timings.
type realRow struct {
	caseResult
	plain time.Duration
	err   error // the plain runs could not be made
	// floor: the definition's runs made plainly (-floor); floorErr says
	// why there is none.
	floor    *floorRun
	floorErr error
}

// realOptions are gate -real's flags.
type realOptions struct {
	dir, only, knownOut, reportsDir string
	parallel                        int
	floor                           bool
}

func runRealGate(ctx context.Context, eng *app.Engine, o realOptions, stdout, stderr io.Writer) int {
	dir, only, knownOut, parallel := o.dir, o.only, o.knownOut, o.parallel
	if dir == "" {
		root, err := bcodeModuleRoot()
		if err != nil {
			fmt.Fprintf(stderr, "bcode bench perf gate -real: %v; pass -suite\n", err)
			return 2
		}
		dir = filepath.Join(root, "engine", "check", "testdata", "real")
	}
	cases, err := labelled.LoadReal(dir)
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf gate -real: %v\n", err)
		return 2
	}
	havePytest := pytestAvailable()
	if !havePytest {
		fmt.Fprintf(stderr, "bcode bench perf gate -real: %s -m pytest is unavailable (apt-get install python3-pytest); Python cases are left out\n", pytestPython)
	}
	sel := selectCases(cases, only, havePytest)
	if _, err := exec.LookPath("cargo"); err != nil {
		fmt.Fprintln(stderr, "bcode bench perf gate -real: cargo is not on PATH (apt-get install cargo, or rustup's with ~/.cargo/bin on PATH); Rust cases are left out")
		sel = slices.DeleteFunc(sel, isRustCase)
	}
	if !haveNodeAndNpm() {
		fmt.Fprintln(stderr, "bcode bench perf gate -real: node or npm is not on PATH (apt-get install nodejs npm); JavaScript cases are left out")
		sel = slices.DeleteFunc(sel, isJSCase)
	}
	if len(sel) == 0 {
		fmt.Fprintln(stderr, "bcode bench perf gate -real: no case selected")
		return 2
	}
	scratch, err := os.MkdirTemp("", "bcode-bench-real-")
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf gate -real: %v\n", err)
		return 2
	}
	defer os.RemoveAll(scratch)

	// Cases run -parallel at a time; each case's gate and plain runs run
	// one after the other, so both see the same contention.
	rows := make([]realRow, len(sel))
	slots := make(chan struct{}, parallel)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range sel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			rows[i] = realCase(ctx, eng, c, filepath.Join(scratch, fmt.Sprintf("case%d", i)), o.floor)
			if o.reportsDir != "" && rows[i].rep != nil {
				if data, err := shown.JSONIndent(rows[i].rep, "", "  "); err == nil {
					_ = os.MkdirAll(o.reportsDir, 0o755)
					_ = os.WriteFile(filepath.Join(o.reportsDir, c.Name+".json"), data, 0o644)
				}
			}
			mu.Lock()
			floor := ""
			if f := rows[i].floor; f != nil {
				floor = fmt.Sprintf(" floor %5.1fs", f.total().Seconds())
			}
			fmt.Fprintf(stderr, "  %-40s %-8s gate %5.1fs plain %5.1fs%s\n", c.Name, rows[i].verdict, rows[i].dur.Seconds(), rows[i].plain.Seconds(), floor)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return 2
	}
	printReal(stdout, rows)
	if knownOut != "" {
		if err := writeKnown(knownOut, rows); err != nil {
			fmt.Fprintf(stderr, "bcode bench perf gate -real: %v\n", err)
			return 2
		}
	}
	results := make([]caseResult, len(rows))
	for i, r := range rows {
		results[i] = r.caseResult
	}
	if fa, _, _ := gateTally(results); fa > 0 {
		return 1
	}
	return 0
}

// realCase builds the case, runs the gate on it, then runs the tests the
// gate targeted (all of them when it reports none) plainly on base and head.
func realCase(ctx context.Context, eng *app.Engine, c labelled.Case, dir string, floor bool) realRow {
	row := realRow{caseResult: checkCaseKeep(ctx, eng, c, filepath.Join(dir, "repo"))}
	defer os.RemoveAll(dir)
	if row.rep == nil {
		row.err = fmt.Errorf("no report")
		return row
	}
	base, head := c.Revisions()
	if isJSCase(c) {
		row.plain, row.err = plainJSRuns(ctx, filepath.Join(dir, "repo"), base, head, filepath.Join(dir, "plain"))
		return row // no floor for JavaScript yet
	}
	b, h, _, err := plainRuns(ctx, filepath.Join(dir, "repo"), base, head, row.rep, filepath.Join(dir, "plain"))
	row.plain, row.err = b+h, err
	if floor && err == nil {
		rounds := 0
		for _, t := range row.rep.Tests {
			rounds = max(rounds, t.Runs-1)
		}
		f, ferr := gateFloor(ctx, filepath.Join(dir, "repo"), base, head, row.rep, filepath.Join(dir, "floor"), rounds)
		if ferr == nil {
			row.floor = &f
		}
		row.floorErr = ferr
	}
	return row
}

// checkCaseKeep is checkCase that keeps the repository and the report, for
// the plain runs that follow.
func checkCaseKeep(ctx context.Context, eng *app.Engine, c labelled.Case, dir string) caseResult {
	r := caseResult{c: c}
	base, head, err := buildCase(ctx, dir, c)
	if err != nil {
		r.verdict, r.detail = verify.Error, "building the repository: "+err.Error()
		return r
	}
	if isJSCase(c) {
		if err := c.InstallJSPackages(ctx, dir); err != nil {
			r.verdict, r.detail = verify.Error, "installing the case's packages: "+err.Error()
			return r
		}
	}
	rep, d, err := checkTimed(ctx, eng, dir, base, head)
	r.dur, r.rep = d, rep
	switch {
	case rep == nil:
		r.verdict, r.detail = verify.Error, fmt.Sprint(err)
	default:
		r.verdict = rep.Verdict
		if len(rep.Reasons) > 0 {
			r.detail = rep.Reasons[0].Message
		}
	}
	return r
}

func printReal(w io.Writer, rows []realRow) {
	results := make([]caseResult, len(rows))
	for i, r := range rows {
		results[i] = r.caseResult
	}
	printAccuracyTitled(w, "Real corpus", results)

	fmt.Fprintln(w, "## Gate wall time against plain runs of the same tests on base and head")
	fmt.Fprintln(w)
	withFloor := false
	for _, r := range rows {
		withFloor = withFloor || r.floor != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if withFloor {
		fmt.Fprintln(tw, "CASE\tLANG\tGATE\tPLAIN\tRATIO\tFLOOR (SETS + REPEATS)\tFLOOR / PLAIN\tGATE / FLOOR\tGATE w/o EVIDENCE / FLOOR")
	} else {
		fmt.Fprintln(tw, "CASE\tLANG\tGATE\tPLAIN\tRATIO")
	}
	var gate, plain, evidence, floor, fgate, fplain, fevidence [len(realLangs)]time.Duration // by realLangs; f…: the cases with a floor
	for _, r := range rows {
		li := caseLang(r.c)
		lang := realLangs[li]
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%.1fs\t\tplain runs failed: %s\n", r.c.Name, lang, r.dur.Seconds(), firstLineOf(r.err.Error()))
			continue
		}
		gate[li] += r.dur
		plain[li] += r.plain
		var ev time.Duration
		if r.rep != nil {
			ev = time.Duration(r.rep.Timings["evidence"]) * time.Millisecond
			evidence[li] += ev
		}
		line := fmt.Sprintf("%s\t%s\t%.1fs\t%.1fs\t%s", r.c.Name, lang, r.dur.Seconds(), r.plain.Seconds(), ratio(r.dur, r.plain))
		switch {
		case r.floor != nil:
			f := r.floor.total()
			floor[li] += f
			fgate[li] += r.dur
			fplain[li] += r.plain
			fevidence[li] += ev
			line += fmt.Sprintf("\t%.1fs (%.1f + %.1f)\t%s\t%s\t%s", f.Seconds(), r.floor.sets.Seconds(), r.floor.repeats.Seconds(), ratio(f, r.plain), ratio(r.dur, f), ratio(r.dur-ev, f))
		case r.floorErr != nil:
			line += "\tfloor failed: " + firstLineOf(r.floorErr.Error())
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
	printRatios(w, gate, plain, evidence)
	if withFloor {
		for li, lang := range realLangs {
			if floor[li] == 0 {
				continue
			}
			fmt.Fprintf(w, "floor, %s: floor / plain %s (%.0fs / %.0fs): the best a gate of this definition can do here; gate / floor %s, without mutation evidence %s\n",
				lang, ratio(floor[li], fplain[li]), floor[li].Seconds(), fplain[li].Seconds(), ratio(fgate[li], floor[li]), ratio(fgate[li]-fevidence[li], floor[li]))
		}
		fmt.Fprintln(w, "Floor: the four file sets (base; base with the head's test files; head; head with the base's test files) each run plainly as above, two at a time, then each Python fail-to-pass repeat round the gate made as a pytest of those node IDs, a process per round and side, two at a time (Go's repeats reuse kept binaries and are left out). Mutation evidence is not in it.")
	}
	fmt.Fprintln(w, "Plain: one `go test -count=1 -vet=off` (or pytest, or `cargo test --offline` of each crate the targets are in) of the gate's targeted tests per side, or a JavaScript case's whole suite with its runner (`vitest run`, `jest`, `node --test`), in snapshots made beforehand and not timed.")
	fmt.Fprintln(w)
	printPhases(w, rows)
}

// printPhases sums the gate's own per-phase timings (the report's
// timings_ms) by language: where the time goes. Phases that run side by
// side (static beside the runs; the run_* of the four snapshots; the
// repeat_* of the two sides) overlap, so they add up to more than the wall
// time; "runs" and "repeats" are the wall time of their groups.
func printPhases(w io.Writer, rows []realRow) {
	sums := [len(realLangs)]map[string]int64{{}, {}, {}, {}}
	var names []string
	seen := map[string]bool{}
	for _, r := range rows {
		if r.rep == nil {
			continue
		}
		li := caseLang(r.c)
		for k, v := range r.rep.Timings {
			sums[li][k] += v
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	fmt.Fprintln(w, "## Where the gate's time goes (seconds summed over the cases; run_*, repeat_* and static overlap)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tGO\tPYTHON\tRUST\tJAVASCRIPT")
	for _, k := range names {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\n", k, float64(sums[0][k])/1000, float64(sums[1][k])/1000, float64(sums[2][k])/1000, float64(sums[3][k])/1000)
	}
	tw.Flush()
}

// realLangs are the real corpus's languages, in the order its sums print.
var realLangs = [...]string{"go", "python", "rust", "javascript"}

// caseLang is the case's index in realLangs.
func caseLang(c labelled.Case) int {
	switch {
	case c.Python:
		return 1
	case isRustCase(c):
		return 2
	case isJSCase(c):
		return 3
	}
	return 0
}

// isRustCase reports whether the case is a Cargo project.
func isRustCase(c labelled.Case) bool {
	return slices.ContainsFunc(c.Base, func(f txtar.File) bool { return f.Name == "Cargo.toml" })
}

// isJSCase reports whether the case is a JavaScript or TypeScript project:
// a package.json at its root.
func isJSCase(c labelled.Case) bool {
	return slices.ContainsFunc(c.Base, func(f txtar.File) bool { return f.Name == "package.json" })
}

func haveNodeAndNpm() bool {
	_, nodeErr := exec.LookPath("node")
	_, npmErr := exec.LookPath("npm")
	return nodeErr == nil && npmErr == nil
}

// plainJSRuns exports the base and the head and runs the project's whole
// suite in each the way a person would, with its runner and the same
// node_modules: `vitest run`, `jest` or `node --test`. A case's suite is
// its kept test files, so this is also the gate's targets or more.
func plainJSRuns(ctx context.Context, repo, base, head, scratch string) (time.Duration, error) {
	defer os.RemoveAll(scratch)
	var total time.Duration
	for _, side := range []struct{ rev, dir string }{{base, filepath.Join(scratch, "base")}, {head, filepath.Join(scratch, "head")}} {
		if err := exportRev(ctx, repo, side.rev, side.dir); err != nil {
			return 0, err
		}
		if mods, err := os.Readlink(filepath.Join(repo, "node_modules")); err == nil {
			if err := os.Symlink(mods, filepath.Join(side.dir, "node_modules")); err != nil {
				return 0, err
			}
		}
		cmd := exec.CommandContext(ctx, "node", jsRunnerArgs(side.dir)...)
		cmd.Dir = side.dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		start := time.Now()
		_ = cmd.Run() // failing tests are an outcome, not an error
		total += time.Since(start)
	}
	return total, ctx.Err()
}

// jsRunnerArgs is node's arguments to run every test of the project in
// dir with the runner its package.json names.
func jsRunnerArgs(dir string) []string {
	manifest, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	switch {
	case strings.Contains(string(manifest), `"vitest"`):
		return []string{"node_modules/vitest/vitest.mjs", "run"}
	case strings.Contains(string(manifest), `"jest"`):
		return []string{"node_modules/jest/bin/jest.js", "--ci"}
	}
	return []string{"--test"}
}

// printRatios prints the gate's time against the plain runs' by language
// and in all, with and without the mutation evidence.
func printRatios(w io.Writer, gate, plain, evidence [len(realLangs)]time.Duration) {
	var with, without []string
	var g, p, e time.Duration
	for li, lang := range realLangs {
		with = append(with, fmt.Sprintf("%s %s (%.0fs / %.0fs)", lang, ratio(gate[li], plain[li]), gate[li].Seconds(), plain[li].Seconds()))
		without = append(without, fmt.Sprintf("%s %s", lang, ratio(gate[li]-evidence[li], plain[li])))
		g, p, e = g+gate[li], p+plain[li], e+evidence[li]
	}
	fmt.Fprintf(w, "time ratio gate / plain: %s, all %s\n", strings.Join(with, ", "), ratio(g, p))
	fmt.Fprintf(w, "without mutation evidence (the runs alone): %s, all %s\n", strings.Join(without, ", "), ratio(g-e, p))
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f×", a.Seconds()/b.Seconds())
}

// writeKnown writes the corpus's list of known disagreements: one case a
// line, with today's verdict and the first reason, for real_test.go.
func writeKnown(path string, rows []realRow) error {
	var b strings.Builder
	b.WriteString("# Cases where the gate's verdict differs from the label, as `bcode bench perf gate -real -write-known` last found them.\n")
	b.WriteString("# name\tverdict today\tfirst reason\n")
	for _, r := range rows {
		if r.verdict != r.c.Verdict {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", r.c.Name, r.verdict, shown.Line(strings.ReplaceAll(firstLineOf(r.detail), "\t", " ")))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
