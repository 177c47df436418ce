package perf

// The gate benchmark: (a) accuracy of `bcode check` on the labelled suite
// (engine/check/testdata/suite), with false acceptance and false rejection;
// (b) the gate's wall time against running the same affected tests plainly
// on the base and on the head, one after the other in one process.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/verify"
)

func init() {
	register(benchmark{
		name:    "gate",
		summary: "accuracy of bcode check on the labelled suite, and its wall time against plain test runs on base and head",
		run:     runGateBench,
	})
}

// pytestPython is Debian's interpreter, the one with pytest.
const pytestPython = "/usr/bin/python3"

func runGateBench(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode bench perf gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	suite := fs.String("suite", "", "directory of labelled *.txtar cases (default: engine/check/testdata/suite of the bcode module around the working directory)")
	only := fs.String("only", "", "comma-separated case names to run (default: all)")
	parallel := fs.Int("parallel", 2, "cases checked at once in the accuracy part")
	timing := fs.String("timing", "go-correct-fix,py-correct-fix,go-breaks-other-package", "comma-separated suite cases for the timing part")
	corpus := fs.String("corpus", "github.com/google/uuid v1.5.0 v1.6.0", "a real module for the timing part: \"MODULE BASE HEAD\" (empty: none)")
	materialize := fs.String("materialize", "", "the corpus materialize script (default: ../shared/corpus/materialize beside the bcode module)")
	skipAccuracy := fs.Bool("skip-accuracy", false, "skip the accuracy part")
	skipTiming := fs.Bool("skip-timing", false, "skip the timing part")
	realCorpus := fs.Bool("real", false, "judge the real corpus (engine/check/testdata/real, or -suite) instead: per case the gate, then plain runs of the same tests on base and head (-parallel cases at once)")
	reportsDir := fs.String("reports", "", "with -real: write each case's report as JSON into this directory")
	floor := fs.Bool("floor", false, "with -real: also time the floor, the runs the gate's definition needs (four file sets, the fail-to-pass repeats) made plainly, two at a time")
	knownOut := fs.String("write-known", "", "with -real: write the cases whose verdict differs from the label to this file (the corpus's KNOWN list)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *realCorpus {
		return runRealGate(ctx, eng, realOptions{dir: *suite, only: *only, knownOut: *knownOut, reportsDir: *reportsDir, parallel: *parallel, floor: *floor}, stdout, stderr)
	}
	if *parallel < 1 {
		fmt.Fprintln(stderr, "bcode bench perf gate: -parallel must be at least 1")
		return 2
	}
	root, rootErr := bcodeModuleRoot()
	cases, err := loadSuite(*suite)
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf gate: %v\n", err)
		return 2
	}
	havePytest := pytestAvailable()
	if !havePytest {
		fmt.Fprintf(stderr, "bcode bench perf gate: %s -m pytest is unavailable (apt-get install python3-pytest); Python cases are left out\n", pytestPython)
	}
	scratch, err := os.MkdirTemp("", "bcode-bench-gate-")
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf gate: %v\n", err)
		return 2
	}
	defer os.RemoveAll(scratch)

	code := 0
	if !*skipAccuracy {
		sel := selectCases(cases, *only, havePytest)
		if len(sel) == 0 {
			fmt.Fprintln(stderr, "bcode bench perf gate: no case selected")
			return 2
		}
		res := accuracy(ctx, eng, sel, *parallel, filepath.Join(scratch, "accuracy"), stderr)
		printAccuracy(stdout, res)
		if fa, _, _ := gateTally(res); fa > 0 {
			code = 1
		}
	}
	if ctx.Err() != nil {
		return 2
	}
	if !*skipTiming {
		var subjects []timingSubject
		for _, name := range splitList(*timing) {
			i := slices.IndexFunc(cases, func(c labelled.Case) bool { return c.Name == name })
			if i < 0 {
				fmt.Fprintf(stderr, "bcode bench perf gate: no case %q for -timing\n", name)
				return 2
			}
			if cases[i].Python && !havePytest {
				continue
			}
			c := cases[i]
			subjects = append(subjects, timingSubject{name: c.Name, python: c.Python, build: func(dir string) (string, string, error) {
				return buildCase(ctx, dir, c)
			}})
		}
		if f := strings.Fields(*corpus); len(f) > 0 {
			if len(f) != 3 {
				fmt.Fprintf(stderr, "bcode bench perf gate: -corpus %q: want \"MODULE BASE HEAD\"\n", *corpus)
				return 2
			}
			script := *materialize
			if script == "" && rootErr == nil {
				script = filepath.Join(filepath.Dir(root), "shared", "corpus", "materialize")
			}
			subjects = append(subjects, timingSubject{name: f[0] + " " + f[1] + "→" + f[2], build: func(dir string) (string, string, error) {
				cmd := exec.CommandContext(ctx, script, f[0], f[1], f[2], dir)
				if out, err := cmd.CombinedOutput(); err != nil {
					return "", "", fmt.Errorf("%s: %v: %s", script, err, out)
				}
				return "HEAD~1", "HEAD", nil
			}})
		}
		rows := timings(ctx, eng, subjects, filepath.Join(scratch, "timing"), stderr)
		printTimings(stdout, rows)
	}
	return code
}

// bcodeModuleRoot finds the bcode module around the working directory.
func bcodeModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/bcode-dev/bcode\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the working directory is not inside the bcode module")
		}
		dir = parent
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func selectCases(cases []labelled.Case, only string, havePytest bool) []labelled.Case {
	names := splitList(only)
	var out []labelled.Case
	for _, c := range cases {
		if len(names) > 0 && !slices.Contains(names, c.Name) {
			continue
		}
		if c.Python && !havePytest {
			continue
		}
		out = append(out, c)
	}
	return out
}

// caseResult is one case of the accuracy part.
type caseResult struct {
	c       labelled.Case
	verdict verify.Verdict
	detail  string // the first reason, for mismatches
	dur     time.Duration
	rep     *verify.Report // -real keeps it for the plain runs
}

func accuracy(ctx context.Context, eng *app.Engine, cases []labelled.Case, parallel int, scratch string, stderr io.Writer) []caseResult {
	out := make([]caseResult, len(cases))
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i] = checkCase(ctx, eng, c, filepath.Join(scratch, c.Name))
			fmt.Fprintf(stderr, "  %-34s %-8s (%.1fs)\n", c.Name, out[i].verdict, out[i].dur.Seconds())
		}()
	}
	wg.Wait()
	return out
}

// checkCase judges one labelled case in a repository built in dir, then
// removes it.
func checkCase(ctx context.Context, eng *app.Engine, c labelled.Case, dir string) caseResult {
	defer os.RemoveAll(dir)
	return checkCaseKeep(ctx, eng, c, dir)
}

// gateTally: false acceptances (a non-verified label marked verified),
// false rejections (a verified label not marked verified), matches.
func gateTally(rs []caseResult) (fa, fr, right int) {
	for _, r := range rs {
		switch {
		case r.c.Verdict != verify.Verified && r.verdict == verify.Verified:
			fa++
		case r.c.Verdict == verify.Verified && r.verdict != verify.Verified:
			fr++
		}
		if r.c.Verdict == r.verdict {
			right++
		}
	}
	return fa, fr, right
}

func printAccuracy(w io.Writer, rs []caseResult) {
	printAccuracyTitled(w, "Labelled suite", rs)
}

func printAccuracyTitled(w io.Writer, title string, rs []caseResult) {
	fmt.Fprintln(w, "## "+title)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tLANG\tKIND\tLABEL\tVERDICT\tMATCH\tTIME")
	var total time.Duration
	for _, r := range rs {
		lang := realLangs[caseLang(r.c)]
		match := "yes"
		if r.c.Verdict != r.verdict {
			match = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1fs\n", r.c.Name, lang, r.c.Kind, r.c.Verdict, r.verdict, match, r.dur.Seconds())
		total += r.dur
	}
	tw.Flush()
	fa, fr, right := gateTally(rs)
	var negatives, positives int
	for _, r := range rs {
		if r.c.Verdict == verify.Verified {
			positives++
		} else {
			negatives++
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "cases %d (%d labelled verified, %d not); gate time summed %.1fs\n", len(rs), positives, negatives, total.Seconds())
	fmt.Fprintf(w, "false acceptance: %d of %d not-verified cases (%s)\n", fa, negatives, pct(fa, negatives))
	fmt.Fprintf(w, "false rejection:  %d of %d verified cases (%s)\n", fr, positives, pct(fr, positives))
	fmt.Fprintf(w, "accuracy (verdict equals label): %d of %d (%s)\n", right, len(rs), pct(right, len(rs)))
	for _, r := range rs {
		if r.c.Verdict != r.verdict {
			fmt.Fprintf(w, "  mismatch %s: label %s, verdict %s: %s\n", r.c.Name, r.c.Verdict, r.verdict, firstLineOf(r.detail))
		}
	}
	fmt.Fprintln(w)
}

func pct(n, d int) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// timingSubject is a repository to time the gate on; build makes it in a
// directory and returns the revisions to check.
type timingSubject struct {
	name   string
	python bool
	build  func(dir string) (base, head string, err error)
}

type timingRow struct {
	name      string
	verdict   verify.Verdict
	targets   []string
	gate      time.Duration
	plainBase time.Duration
	plainHead time.Duration
	plainNote string
	err       error
}

// checkTimed runs the gate on a change the way `bcode check` does
// (app.Check: the engine's runner and its one secret scanner, the run
// recorded in the engine's ledger) and times it. The scanner loads once
// per process, before the clock starts; a failure to load it comes back
// from Check.
func checkTimed(ctx context.Context, eng *app.Engine, dir, base, head string) (*verify.Report, time.Duration, error) {
	_, _ = eng.Redactor()
	start := time.Now()
	rep, err := eng.Check(ctx, app.CheckRequest{Repo: dir, Base: base, Head: head})
	return rep, time.Since(start), err
}

// timings runs, for each subject in turn (never in parallel, so neither
// side steals the other's cores): the gate, then the plain runs of the
// affected tests on snapshots of the base and of the head.
func timings(ctx context.Context, eng *app.Engine, subjects []timingSubject, scratch string, stderr io.Writer) []timingRow {
	var rows []timingRow
	for i, s := range subjects {
		row := timingRow{name: s.name}
		dir := filepath.Join(scratch, fmt.Sprintf("repo%d", i))
		base, head, err := s.build(dir)
		if err != nil {
			row.err = err
			rows = append(rows, row)
			continue
		}
		fmt.Fprintf(stderr, "timing %s: gate\n", s.name)
		rep, d, err := checkTimed(ctx, eng, dir, base, head)
		row.gate = d
		if rep == nil {
			row.err = err
			rows = append(rows, row)
			continue
		}
		row.verdict = rep.Verdict
		row.targets = rep.Suite.Targeted.Targets
		fmt.Fprintf(stderr, "timing %s: plain runs on base and head\n", s.name)
		row.plainBase, row.plainHead, row.plainNote, row.err = plainRuns(ctx, dir, base, head, rep, filepath.Join(scratch, fmt.Sprintf("snap%d", i)))
		rows = append(rows, row)
		os.RemoveAll(dir)
	}
	return rows
}

// plainRuns exports the base and the head (the working tree when head is
// empty) and runs the affected tests in each the way a person would:
// `go test -count=1 -vet=off TARGETS` (the gate's flags, without its
// repetitions), or pytest on the affected test files.
func plainRuns(ctx context.Context, repo, base, head string, rep *verify.Report, scratch string) (b, h time.Duration, note string, err error) {
	baseDir, headDir := filepath.Join(scratch, "base"), filepath.Join(scratch, "head")
	defer os.RemoveAll(scratch)
	if err := exportRev(ctx, repo, base, baseDir); err != nil {
		return 0, 0, "", err
	}
	if head == "" {
		if err := copyWorktree(ctx, repo, headDir); err != nil {
			return 0, 0, "", err
		}
	} else if err := exportRev(ctx, repo, head, headDir); err != nil {
		return 0, 0, "", err
	}
	goTargets, pyTargets := splitTargets(rep, headDir)
	if len(rep.Suite.Targeted.Targets) == 0 {
		note = "no targets reported; ran everything"
	}
	run := func(dir string) (time.Duration, error) {
		start := time.Now()
		plainRun(ctx, dir, goTargets, pyTargets)
		return time.Since(start), ctx.Err()
	}
	if b, err = run(baseDir); err != nil {
		return
	}
	h, err = run(headDir)
	return
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func exportRev(ctx context.Context, repo, rev, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", rev)
	var tarball bytes.Buffer
	archive.Stdout = &tarball
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w", rev, err)
	}
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, out)
	}
	return nil
}

// copyWorktree copies the tracked and untracked (not ignored) files.
func copyWorktree(ctx context.Context, repo, dir string) error {
	ls := exec.CommandContext(ctx, "git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	out, err := ls.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(repo, rel))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func printTimings(w io.Writer, rows []timingRow) {
	fmt.Fprintln(w, "## Gate wall time against plain test runs (same affected tests, base then head)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT\tVERDICT\tTARGETS\tGATE\tPLAIN BASE\tPLAIN HEAD\tPLAIN TOTAL\tRATIO")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\terror\t\t\t\t\t\t%s\n", r.name, firstLineOf(r.err.Error()))
			continue
		}
		plain := r.plainBase + r.plainHead
		ratio := "n/a"
		if plain > 0 {
			ratio = fmt.Sprintf("%.1f×", r.gate.Seconds()/plain.Seconds())
		}
		targets := strings.Join(r.targets, " ")
		if len(targets) > 40 {
			targets = fmt.Sprintf("%d targets", len(r.targets))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fs\t%.1fs\t%.1fs\t%.1fs\t%s\n", r.name, r.verdict, targets,
			r.gate.Seconds(), r.plainBase.Seconds(), r.plainHead.Seconds(), plain.Seconds(), ratio)
	}
	tw.Flush()
	for _, r := range rows {
		if r.plainNote != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.name, r.plainNote)
		}
	}
	fmt.Fprintln(w, "\nThe gate runs each new or modified test 3× on base and head (flake check), a control run where needed,")
	fmt.Fprintln(w, "the targeted suite and the full suite, and lays out its own snapshots; the plain runs are one `go test -count=1 -vet=off`")
	fmt.Fprintln(w, "(or pytest) of the same targets per side, in snapshots made beforehand and not timed.")
}

// buildCase makes the case's repository in dir and returns the revisions
// to check.
func buildCase(ctx context.Context, dir string, c labelled.Case) (base, head string, err error) {
	if err := c.Build(ctx, dir); err != nil {
		return "", "", err
	}
	base, head = c.Revisions()
	return base, head, nil
}

// loadSuite reads the labelled cases in dir; "" is the suite of the bcode
// module around the working directory.
func loadSuite(dir string) ([]labelled.Case, error) {
	if dir == "" {
		root, err := bcodeModuleRoot()
		if err != nil {
			return nil, fmt.Errorf("%v; pass -suite", err)
		}
		dir = filepath.Join(root, "engine", "check", "testdata", "suite")
	}
	return labelled.Load(dir)
}

// pytestAvailable reports whether Debian's interpreter has pytest.
func pytestAvailable() bool {
	return exec.Command(pytestPython, "-m", "pytest", "--version").Run() == nil
}
