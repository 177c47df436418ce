package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

func init() {
	register(benchmark{
		name:    "evidence",
		summary: "mutation evidence: bcode schemata vs bcode per-mutant overlay vs gremlins unleash --diff",
		run:     benchEvidence,
	})
}

// evidenceCase is one change to mutate: a repository whose HEAD~1..HEAD is
// the diff.
type evidenceCase struct {
	name string
	dir  string
}

// toolRun is one tool's result on one case.
type toolRun struct {
	tool    string
	mutants map[string][]string // file:line:operator -> verdicts
	count   int
	wall    time.Duration
	err     string
}

func (t toolRun) perMinute() float64 {
	if t.wall <= 0 {
		return 0
	}
	return float64(t.count) / t.wall.Minutes()
}

func benchEvidence(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	o, ok := parseEvidenceFlags(args, stderr)
	if !ok {
		return 2
	}
	if !o.goToo {
		benchPython(ctx, eng, o.pyReal, o.pyCases, o.pyWhole, o.pyIsolation, o.workers, stdout, stderr)
		return 0
	}
	work, err := os.MkdirTemp("", "bcode-bench-evidence-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer os.RemoveAll(work)
	cases, err := evidenceCases(ctx, o, work, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf evidence: %v\n", err)
		return 2
	}

	gbin := findGremlins(o.gremlinsBin)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\ttool\tmutants\twall\tmutants/min\tvs gremlins\tagreement with gremlins")
	var disagreements []string
	var sums []goSummary
	for _, c := range cases {
		load := loadAverage()
		fmt.Fprintf(stderr, "== %s (load %s)\n", c.name, load)
		runs, sum, err := evidenceCaseRuns(ctx, eng, o, c, gbin, stderr)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		sum.load = [2]string{load, loadAverage()}
		disagreements = append(disagreements, printEvidenceRuns(tw, c, runs, sum.gremlins)...)
		sums = append(sums, sum)
	}
	tw.Flush()
	if len(disagreements) > 0 {
		fmt.Fprintln(stdout, "\nverdict disagreements (bcode cold vs gremlins, file:line:operator):")
		for _, d := range disagreements {
			fmt.Fprintln(stdout, "  "+d)
		}
	}
	printGoSummary(stdout, sums)
	if o.pyCases != "" || o.pyWhole != "" {
		fmt.Fprintln(stdout)
		benchPython(ctx, eng, o.pyReal, o.pyCases, o.pyWhole, o.pyIsolation, o.workers, stdout, stderr)
	}
	return 0
}

// evidenceOptions are benchEvidence's flags.
type evidenceOptions struct {
	corpus, ownChanges, changes           string
	gremlinsBin                           string
	synth, small, workers, coefficient    int
	skipOverlay, perProcess, goToo        bool
	save                                  string
	pyReal, pyCases, pyWhole, pyIsolation string
}

func parseEvidenceFlags(args []string, stderr io.Writer) (evidenceOptions, bool) {
	fs := flag.NewFlagSet("bcode bench perf evidence", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o evidenceOptions
	fs.StringVar(&o.corpus, "corpus", "/work/shared/corpus", "directory with go-changes.tsv and materialize")
	fs.StringVar(&o.ownChanges, "own-changes", "engine/bench/perf/testdata/evidence-changes.tsv",
		"the bench's own real changes (the diffs of at least 50 mutants), in go-changes.tsv's format")
	fs.StringVar(&o.changes, "changes", "github.com/hashicorp/go-version@v1.6.0..v1.7.0,github.com/google/uuid@v1.5.0..v1.6.0",
		"comma-separated MODULE@BASE..HEAD real changes (\"all\": every row of the corpus's go-changes.tsv and of -own-changes; \"large\": the rows of -own-changes)")
	fs.IntVar(&o.synth, "synthetic", 40, "functions in the synthetic diff (about 9 mutants each); 0 skips it")
	fs.IntVar(&o.small, "synthetic-small", 2, "functions in a second, save-sized synthetic diff (at most 20 mutants for 2); 0 skips it")
	fs.IntVar(&o.workers, "workers", 2, "parallel workers for every tool")
	fs.StringVar(&o.gremlinsBin, "gremlins", "", "gremlins binary (default: on PATH, then $GOPATH/bin)")
	fs.BoolVar(&o.skipOverlay, "skip-overlay", false, "do not run bcode's per-mutant overlay fallback")
	fs.BoolVar(&o.perProcess, "per-process", true, "also run bcode cold with a process per baseline test (the baseline before the one-process one)")
	// Gremlins derives its timeout from the coverage run's total time, which
	// a warm build cache makes tiny; on a loaded machine its default then
	// times out mutants that merely waited for a CPU. A larger coefficient
	// keeps the comparison about verdicts, and only slows gremlins down.
	fs.IntVar(&o.coefficient, "gremlins-timeout-coefficient", 20, "gremlins --timeout-coefficient")
	fs.StringVar(&o.pyReal, "python-real", "engine/check/testdata/real", "directory of the real corpus's txtar cases")
	fs.StringVar(&o.pyCases, "python", "boltons-bits-length,boltons-jsonl-eof,boltons-split-maxsplit-zero,cachetools-popitem-context,parse-hex-binary-prefix,tabulate-empty-maxcolwidths",
		"comma-separated real Python cases (their HEAD~1..HEAD); \"\" skips them")
	fs.StringVar(&o.pyWhole, "python-whole", "boltons-bits-length:boltons/mathutils.py,cachetools-popitem-context:cachetools/ttl.py",
		"comma-separated CASE:MODULE: every line of a real module at the case's head")
	fs.StringVar(&o.pyIsolation, "python-isolation", "", "Python schema workers' isolation: state (default: a batch of mutants per forked child) or fork (a child per mutant)")
	fs.BoolVar(&o.goToo, "go", true, "run the Go cases (false: Python only)")
	fs.StringVar(&o.save, "save", "append", "the save row's edit to each changed Go file: append (an inert declaration at the end) or body (a statement in the body of a changed function)")
	if fs.Parse(args) != nil {
		return o, false
	}
	if o.save != "append" && o.save != "body" {
		fmt.Fprintf(stderr, "bcode bench perf evidence: -save %q: want append or body\n", o.save)
		return o, false
	}
	return o, true
}

// evidenceCases writes the synthetic diffs and materializes the corpus's
// changes under work; a change that does not materialize is left out.
func evidenceCases(ctx context.Context, o evidenceOptions, work string, stderr io.Writer) ([]evidenceCase, error) {
	var cases []evidenceCase
	for _, s := range []struct {
		dir   string
		funcs int
	}{{"synthetic", o.synth}, {"synthetic-small", o.small}} {
		if s.funcs <= 0 {
			continue
		}
		dir := filepath.Join(work, s.dir)
		if err := writeSynthetic(dir, s.funcs); err != nil {
			return nil, err
		}
		cases = append(cases, evidenceCase{name: fmt.Sprintf("synthetic (%d funcs)", s.funcs), dir: dir})
	}
	changes, err := corpusChanges(o.corpus, o.ownChanges, o.changes)
	if err != nil {
		return nil, err
	}
	for i, c := range changes {
		dir := filepath.Join(work, fmt.Sprintf("real%d", i))
		parts, err := parseChange(c)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(o.corpus, "materialize"), parts[0], parts[1], parts[2], dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "materialize %s: %v\n%s", c, err, out)
			continue
		}
		cases = append(cases, evidenceCase{name: c, dir: dir})
	}
	return cases, nil
}

// evidenceCaseRuns runs every tool on one case: bcode cold, warm and after
// a save on one cache, the compile floor, the per-process baseline and the
// overlay when asked, then gremlins.
func evidenceCaseRuns(ctx context.Context, eng *app.Engine, o evidenceOptions, c evidenceCase, gbin string, stderr io.Writer) ([]toolRun, goSummary, error) {
	cache, err := os.MkdirTemp("", "bcode-bench-cache-")
	if err != nil {
		return nil, goSummary{}, err
	}
	sum := bcodeCacheRuns(ctx, eng, c, o.workers, cache, o.save, stderr)
	sum.name = c.name
	os.RemoveAll(cache)
	runs := []toolRun{sum.cold, sum.warm, sum.save}
	if o.perProcess {
		// Before the one-process baseline: a coverage binary of its own
		// and a process per test, then the schema build.
		runs = append(runs, runBcodeWith(ctx, eng, c, app.EvidenceOptions{Workers: o.workers, PerProcessBaseline: true}, "", "bcode cold, per-process baseline", stderr))
	}
	if !o.skipOverlay {
		runs = append(runs, runBcode(ctx, eng, c, o.workers, true, "", "bcode-overlay", stderr))
	}
	sum.gremlins = runGremlins(ctx, c, gbin, o.workers, o.coefficient, stderr)
	return append(runs, sum.gremlins, sum.floor), sum, nil
}

// bcodeCacheRuns runs bcode three times on one cache. cold: an empty bcode
// cache (Go's build cache is as the machine has it, as for gremlins); warm:
// the same change again, every cache filled; save: one more edit to the
// changed files (a declaration at the end), so the package's content, its
// baseline and its schema are new while its dependencies are built. Then
// the floor: building the changed packages' test binaries once, after
// another edit, as any tool that runs the tests must.
func bcodeCacheRuns(ctx context.Context, eng *app.Engine, c evidenceCase, workers int, cache, save string, stderr io.Writer) goSummary {
	var s goSummary
	s.cold = runBcode(ctx, eng, c, workers, false, cache, "bcode cold", stderr)
	s.warm = runBcode(ctx, eng, c, workers, false, cache, "bcode warm", stderr)
	touch := touchChanged
	if save == "body" {
		touch = func(dir string) (func(), error) { return editBodies(ctx, dir) }
	}
	restore, err := touch(c.dir)
	if err != nil {
		s.save.err = err.Error()
		return s
	}
	s.save = runBcode(ctx, eng, c, workers, false, cache, "bcode save ("+save+")", stderr)
	restore()
	restore, err = touch(c.dir)
	if err != nil {
		s.floor.err = err.Error()
		return s
	}
	s.floor = compileFloor(ctx, c.dir)
	restore()
	return s
}

// printEvidenceRuns prints one case's rows and returns bcode cold's
// disagreements with gremlins.
func printEvidenceRuns(tw io.Writer, c evidenceCase, runs []toolRun, g toolRun) []string {
	var disagreements []string
	for _, r := range runs {
		ratio, agree := "", ""
		if r.tool != "gremlins" && r.tool != "floor: go test -c" && g.err == "" && g.perMinute() > 0 && r.err == "" {
			ratio = fmt.Sprintf("%.1fx", r.perMinute()/g.perMinute())
			same, both, diffs := agreement(r, g)
			agree = fmt.Sprintf("%d/%d", same, both)
			if r.tool == "bcode cold" {
				for _, d := range diffs {
					disagreements = append(disagreements, c.name+": "+d)
				}
			}
		}
		switch {
		case r.err != "":
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%s\n", c.name, r.tool, r.err)
		case r.tool == "floor: go test -c":
			fmt.Fprintf(tw, "%s\t%s\t\t%s\t\t\t\n", c.name, r.tool, r.wall.Round(10*time.Millisecond))
		default:
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f\t%s\t%s\n", c.name, r.tool, r.count, r.wall.Round(10*time.Millisecond), r.perMinute(), ratio, agree)
		}
	}
	return disagreements
}

// corpusChanges expands -changes: a list of MODULE@BASE..HEAD, "all" (the
// shared corpus's rows, then the bench's own) or "large" (the bench's own
// rows). A list file that cannot be read or has a malformed row is an
// error, not a shorter run.
func corpusChanges(corpus, own, spec string) ([]string, error) {
	var files []string
	switch spec {
	case "":
		return nil, nil
	case "all":
		files = []string{filepath.Join(corpus, "go-changes.tsv"), own}
	case "large":
		files = []string{own}
	default:
		out := strings.Split(spec, ",")
		for _, c := range out {
			if _, err := parseChange(c); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var out []string
	for _, f := range files {
		rows, err := readChanges(f)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// readChanges reads a go-changes.tsv file: MODULE, BASE and HEAD separated
// by tabs, # starting a comment line.
func readChanges(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("the list of real changes: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want MODULE, BASE and HEAD separated by tabs, got %q", file, n, line)
		}
		out = append(out, fields[0]+"@"+fields[1]+".."+fields[2])
	}
	return out, sc.Err()
}

// parseChange splits MODULE@BASE..HEAD.
func parseChange(c string) ([3]string, error) {
	mod, rest, ok1 := strings.Cut(c, "@")
	base, head, ok2 := strings.Cut(rest, "..")
	if !ok1 || !ok2 || mod == "" || base == "" || head == "" {
		return [3]string{}, fmt.Errorf("-changes: %q is not MODULE@BASE..HEAD", c)
	}
	return [3]string{mod, base, head}, nil
}

// runBcode runs the engine on HEAD~1..HEAD of the case with the bcode
// cache in cache ("" for a fresh one, removed afterwards).
func runBcode(ctx context.Context, eng *app.Engine, c evidenceCase, workers int, overlay bool, cache, tool string, stderr io.Writer) toolRun {
	return runBcodeWith(ctx, eng, c, app.EvidenceOptions{Workers: workers, Overlay: overlay}, cache, tool, stderr)
}

// runBcodeWith is runBcode with every option given (CacheDir is set here).
func runBcodeWith(ctx context.Context, eng *app.Engine, c evidenceCase, opts app.EvidenceOptions, cache, tool string, stderr io.Writer) toolRun {
	run := toolRun{tool: tool, mutants: map[string][]string{}}
	start := time.Now()
	// The case directory is a clean checkout of HEAD, so it serves as the
	// head snapshot; the change is read from git's own diff.
	change, err := diffChange(ctx, c.dir)
	if err != nil {
		run.err = err.Error()
		return run
	}
	dir := c.dir
	if cache == "" {
		cache, err = os.MkdirTemp("", "bcode-bench-cache-")
		if err != nil {
			run.err = err.Error()
			return run
		}
		defer os.RemoveAll(cache)
	}
	opts.CacheDir = cache
	res, err := eng.Evidence(ctx, app.EvidenceRequest{Change: change, Dir: dir, Options: opts, Runner: host.New()}, verify.NoProgress{})
	rep := res.Report
	run.wall = time.Since(start)
	if err != nil {
		run.err = oneLineErr(err)
		return run
	}
	st := rep.Stats
	fmt.Fprintf(stderr, "   %s: %d mutants in %s (%v; baseline %s, in one process %d, cached %d, tests kept %d, run again %d; schema cached %d)\n", tool, len(rep.Mutants), run.wall.Round(time.Millisecond),
		st.Verdicts, st.Baseline.Round(time.Millisecond), st.BaselineInProcess, st.BaselineCached, st.BaselineKept, st.BaselineRerun, st.SchemaCached)
	for _, m := range rep.Mutants {
		if m.Verdict == mutate.Ignored {
			continue
		}
		run.count++
		// Gremlins reports the operator's position; bcode the expression's.
		// Lines agree for one-line expressions, which is what matching uses.
		k := fmt.Sprintf("%s:%d:%s", m.File, m.Line, m.Operator)
		run.mutants[k] = append(run.mutants[k], string(m.Verdict))
	}
	return run
}

func oneLineErr(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

func findGremlins(flagged string) string {
	if flagged != "" {
		return flagged
	}
	if p, err := exec.LookPath("gremlins"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "gremlins")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// gremlinsOps maps gremlins' mutator types to bcode's operators, where one
// matches; others are counted but not compared.
var gremlinsOps = map[string]string{
	"CONDITIONALS_BOUNDARY": mutate.OpConditionalBoundary,
	"CONDITIONALS_NEGATION": mutate.OpRelationalNegation,
	"ARITHMETIC_BASE":       mutate.OpArithIndex,
}

var gremlinsStatus = map[string]string{
	"KILLED": "killed", "LIVED": "survived", "NOT COVERED": "not_covered",
	"TIMED OUT": "timeout", "NOT VIABLE": "unviable", "SKIPPED": "skipped", "RUNNABLE": "runnable",
}

// runGremlins runs `gremlins unleash --diff HEAD~1` on the case with the
// mutators closest to bcode's (boundary, negation, arithmetic).
func runGremlins(ctx context.Context, c evidenceCase, bin string, workers, coefficient int, stderr io.Writer) toolRun {
	run := toolRun{tool: "gremlins", mutants: map[string][]string{}}
	if bin == "" {
		run.err = "gremlins not installed (go install github.com/go-gremlins/gremlins/cmd/gremlins@latest)"
		return run
	}
	out := filepath.Join(filepath.Dir(c.dir), filepath.Base(c.dir)+"-gremlins.json")
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "unleash", "--diff", "HEAD~1", "--output", out, "--workers", fmt.Sprint(workers),
		"--timeout-coefficient", fmt.Sprint(coefficient),
		"--increment-decrement=false", "--invert-negatives=false", ".")
	cmd.Dir = c.dir
	logs, err := cmd.CombinedOutput()
	run.wall = time.Since(start)
	if err != nil {
		run.err = "gremlins failed: " + oneLineErr(fmt.Errorf("%v: %s", err, lastLine(string(logs))))
		return run
	}
	var res struct {
		Files []struct {
			Filename  string `json:"file_name"`
			Mutations []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
				Line   int    `json:"line"`
			} `json:"mutations"`
		} `json:"files"`
	}
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		run.err = "reading gremlins output: " + err.Error()
		return run
	}
	for _, f := range res.Files {
		for _, m := range f.Mutations {
			// --diff lists every mutant of a touched file and marks those
			// off the changed lines SKIPPED: they were neither produced
			// for the diff nor judged, so they do not count.
			if m.Status == "SKIPPED" {
				continue
			}
			run.count++
			op := gremlinsOps[m.Type]
			if op == "" {
				op = strings.ToLower(m.Type)
			}
			k := fmt.Sprintf("%s:%d:%s", filepath.ToSlash(f.Filename), m.Line, op)
			st := gremlinsStatus[m.Status]
			if st == "" {
				st = m.Status
			}
			run.mutants[k] = append(run.mutants[k], st)
		}
	}
	fmt.Fprintf(stderr, "   gremlins: %d mutants in %s\n", run.count, run.wall.Round(time.Millisecond))
	return run
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// agreement compares verdicts on the keys both tools produced. Where a key
// holds several mutants, the sorted verdict lists must match.
func agreement(a, b toolRun) (same, both int, diffs []string) {
	keys := make([]string, 0, len(a.mutants))
	for k := range a.mutants {
		if _, ok := b.mutants[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		x := append([]string(nil), a.mutants[k]...)
		y := append([]string(nil), b.mutants[k]...)
		sort.Strings(x)
		sort.Strings(y)
		both++
		if strings.Join(x, ",") == strings.Join(y, ",") {
			same++
			continue
		}
		// Different numbers of mutants behind one key are different
		// operators (gremlins swaps every arithmetic operator on the line,
		// bcode index arithmetic only): they agree when each tool gives
		// them all one and the same verdict.
		if len(x) != len(y) && x[0] == x[len(x)-1] && y[0] == y[len(y)-1] && x[0] == y[0] {
			same++
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: bcode %v, gremlins %v", k, x, y))
	}
	return same, both, diffs
}

// writeSynthetic builds a module whose HEAD~1..HEAD adds n functions of
// boundary-heavy code and tests that pin some boundaries and miss others.
func writeSynthetic(dir string, n int) error {
	if err := os.MkdirAll(filepath.Join(dir, "synth"), 0o755); err != nil {
		return err
	}
	gitRun := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	write := func(name, content string) error {
		return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	if err := write("go.mod", "module example.com/synth\n\ngo 1.22\n"); err != nil {
		return err
	}
	if err := write("synth/synth.go", "// Package synth is generated for bcode bench perf.\npackage synth\n"); err != nil {
		return err
	}
	if err := write("synth/synth_test.go", "package synth\n\nimport \"testing\"\n\nfunc TestNothing(t *testing.T) {}\n"); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "base"}} {
		if err := gitRun(args...); err != nil {
			return err
		}
	}
	var src, tests strings.Builder
	src.WriteString("// Package synth is generated for bcode bench perf.\npackage synth\n")
	tests.WriteString("package synth\n\nimport \"testing\"\n\nfunc TestNothing(t *testing.T) {}\n")
	for i := 0; i < n; i++ {
		lo, hi := i, i+10
		fmt.Fprintf(&src, `
// Clamp%[1]d limits v to [%[2]d, %[3]d].
func Clamp%[1]d(v int) int {
	if v < %[2]d {
		return %[2]d
	}
	if v > %[3]d {
		return %[3]d
	}
	return v
}

// Window%[1]d returns the last k elements of s.
func Window%[1]d(s []int, k int) []int {
	if k >= len(s) {
		return s
	}
	return s[len(s)-k:]
}
`, i, lo, hi)
		// Even functions get boundary tests; odd ones only mid-range values.
		if i%2 == 0 {
			fmt.Fprintf(&tests, `
func TestClamp%[1]d(t *testing.T) {
	for _, c := range [][2]int{{%[2]d - 1, %[2]d}, {%[2]d, %[2]d}, {%[3]d, %[3]d}, {%[3]d + 1, %[3]d}, {%[2]d + 5, %[2]d + 5}} {
		if got := Clamp%[1]d(c[0]); got != c[1] {
			t.Fatalf("Clamp%[1]d(%%d) = %%d, want %%d", c[0], got, c[1])
		}
	}
	if got := Window%[1]d([]int{1, 2, 3}, 2); len(got) != 2 || got[0] != 2 {
		t.Fatal(got)
	}
	if got := Window%[1]d([]int{1, 2, 3}, 3); len(got) != 3 {
		t.Fatal(got)
	}
}
`, i, lo, hi)
		} else {
			fmt.Fprintf(&tests, `
func TestClamp%[1]d(t *testing.T) {
	if Clamp%[1]d(%[2]d - 100) != %[2]d || Clamp%[1]d(%[3]d + 100) != %[3]d || Clamp%[1]d(%[2]d + 5) != %[2]d + 5 {
		t.Fatal("Clamp%[1]d")
	}
	if got := Window%[1]d([]int{1, 2, 3}, 1); len(got) != 1 {
		t.Fatal(got)
	}
}
`, i, lo, hi)
		}
	}
	if err := write("synth/synth.go", src.String()); err != nil {
		return err
	}
	if err := write("synth/synth_test.go", tests.String()); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", "head"}} {
		if err := gitRun(args...); err != nil {
			return err
		}
	}
	return nil
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// diffChange reads HEAD~1..HEAD of the repository in dir into a Change
// (paths and changed head lines; mutate needs nothing else).
func diffChange(ctx context.Context, dir string) (*verify.Change, error) {
	cmd := exec.CommandContext(ctx, "git", "diff", "-U0", "--no-renames", "--no-color", "HEAD~1", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git diff in %s: %w", dir, err)
	}
	ch := &verify.Change{Base: "HEAD~1", Head: "HEAD"}
	var cur *verify.FileChange
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "+++ "):
			name := strings.TrimPrefix(line, "+++ ")
			if name == "/dev/null" {
				cur = nil
				continue
			}
			ch.Files = append(ch.Files, verify.FileChange{Path: strings.TrimPrefix(name, "b/"), Status: verify.Modified})
			cur = &ch.Files[len(ch.Files)-1]
		case cur != nil && strings.HasPrefix(line, "@@ "):
			g := hunkHeader.FindStringSubmatch(line)
			if g == nil {
				continue
			}
			start, _ := strconv.Atoi(g[1])
			n := 1
			if g[2] != "" {
				n, _ = strconv.Atoi(g[2])
			}
			if n > 0 {
				cur.Changed = append(cur.Changed, verify.LineRange{Start: start, End: start + n - 1})
			}
		}
	}
	return ch, nil
}
