package perf

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// pyCase is one real Python change: a two-commit repository built from a
// case of the real corpus (engine/check/testdata/real), or its head with
// every line of one module selected ("whole").
type pyCase struct {
	name  string
	dir   string
	whole string // a module whose every line is mutated, or ""
}

// pyRun is one engine mode's result on a case.
type pyRun struct {
	mode    string
	rep     *mutate.Report
	wall    time.Duration
	cpu     time.Duration // user+system time of every process the run started
	counted int
	err     string
}

func (r pyRun) perCPUMinute() float64 {
	if r.cpu <= 0 {
		return 0
	}
	return float64(r.counted) / r.cpu.Minutes()
}

// childCPU is the user and system time of this process's waited-for
// children so far: on a shared machine it says what a run cost, where wall
// time also says how busy the machine was.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r pyRun) perMinute() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.counted) / r.wall.Minutes()
}

// benchPython compares the schemata engine with the honest baseline (a
// fresh interpreter per mutant running its covering tests, the mutant
// applied as text) on real Python changes, both from an empty cache.
func benchPython(ctx context.Context, eng *app.Engine, realDir, cases, whole, isolation string, workers int, stdout, stderr io.Writer) {
	work, err := os.MkdirTemp("", "bcode-bench-pyevidence-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return
	}
	defer os.RemoveAll(work)
	list := buildPyCases(ctx, realDir, cases, whole, work, stderr)
	if len(list) > 0 {
		// Both modes share the interpreter probe (remembered per process)
		// and the page cache of pytest's files: a discarded run pays for
		// them, so neither mode's first case does.
		fmt.Fprintf(stderr, "== warm-up (discarded): %s\n", list[0].name)
		runPyMode(ctx, eng, list[0], workers, false, isolation, stderr)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tmode\tmutants\tverdicts\twall\trun phase\tCPU\tmutants/min\tvs fresh\tmutants/CPU-min\tvs fresh\tverdicts equal")
	var t pyTotals
	for _, c := range list {
		load := loadAverage()
		fmt.Fprintf(stderr, "== %s (load %s)\n", c.name, load)
		s := runPyMode(ctx, eng, c, workers, false, isolation, stderr)
		f := runPyMode(ctx, eng, c, workers, true, isolation, stderr)
		var ratio, cpuRatio, agree string
		if s.err == "" && f.err == "" {
			ratio, cpuRatio, agree = t.add(ctx, c, s, f, load, stderr)
		}
		printPyRuns(tw, c, []pyRun{s, f}, ratio, cpuRatio, agree)
	}
	t.print(tw)
	tw.Flush()
	printPyFloors(stdout, t.floors)
}

// buildPyCases builds the named real cases, then the whole-module ones,
// under work; a case that does not build is reported and left out.
func buildPyCases(ctx context.Context, realDir, cases, whole, work string, stderr io.Writer) []pyCase {
	var list []pyCase
	add := func(name, module string) {
		data, err := os.ReadFile(filepath.Join(realDir, name+".txtar"))
		if err != nil {
			fmt.Fprintf(stderr, "python case %s: %v\n", name, err)
			return
		}
		dir := filepath.Join(work, fmt.Sprintf("case%d", len(list)))
		if err := buildPyCase(ctx, dir, txtar.Parse(data)); err != nil {
			fmt.Fprintf(stderr, "python case %s: %v\n", name, err)
			return
		}
		label := name
		if module != "" {
			label = name + " (all of " + module + ")"
		}
		list = append(list, pyCase{name: label, dir: dir, whole: module})
	}
	for _, c := range splitList(cases) {
		add(c, "")
	}
	for _, c := range splitList(whole) {
		name, module, _ := strings.Cut(c, ":")
		add(name, module)
	}
	return list
}

// pyFloorRow is one case's Python floor against both modes.
type pyFloorRow struct {
	name                string
	mutants             int
	floor, fresh, bcode time.Duration
	floorCPU, bcodeCPU  time.Duration // user+system of every process each started
	load                string
}

// pyTotals sum the cases both modes ran: bcode's schemata (S) and fresh
// interpreters (F).
type pyTotals struct {
	sumS, sumF, cpuS, cpuF time.Duration
	nS, nF, same, both     int
	floors                 []pyFloorRow
}

// add counts one case both modes ran, times its floor, and returns
// bcode's ratios against fresh and their agreement.
func (t *pyTotals) add(ctx context.Context, c pyCase, s, f pyRun, load string, stderr io.Writer) (ratio, cpuRatio, agree string) {
	if f.perMinute() > 0 {
		ratio = fmt.Sprintf("%.1fx", s.perMinute()/f.perMinute())
	}
	if f.perCPUMinute() > 0 {
		cpuRatio = fmt.Sprintf("%.1fx", s.perCPUMinute()/f.perCPUMinute())
	}
	t.cpuS += s.cpu
	t.cpuF += f.cpu
	eq, n, diffs := pyAgreement(s.rep, f.rep)
	agree = fmt.Sprintf("%d/%d", eq, n)
	t.same += eq
	t.both += n
	for _, d := range diffs {
		fmt.Fprintf(stderr, "   disagreement: %s\n", d)
	}
	t.sumS += s.wall
	t.sumF += f.wall
	t.nS += s.counted
	t.nF += f.counted
	cpu0 := childCPU()
	if d, ok := pytestFloor(ctx, c.dir, s.rep); ok {
		t.floors = append(t.floors, pyFloorRow{c.name, s.counted, d, f.wall, s.wall, childCPU() - cpu0, s.cpu, load})
	}
	return ratio, cpuRatio, agree
}

// print writes the all-cases rows, when both modes ran something.
func (t *pyTotals) print(tw io.Writer) {
	if t.sumS <= 0 || t.sumF <= 0 || t.cpuS <= 0 || t.cpuF <= 0 {
		return
	}
	ps, pf := float64(t.nS)/t.sumS.Minutes(), float64(t.nF)/t.sumF.Minutes()
	cs, cf := float64(t.nS)/t.cpuS.Minutes(), float64(t.nF)/t.cpuF.Minutes()
	fmt.Fprintf(tw, "all cases\tbcode\t%d\t\t%s\t\t%s\t%.0f\t%.1fx\t%.0f\t%.1fx\t%d/%d\n", t.nS, t.sumS.Round(100*time.Millisecond), t.cpuS.Round(100*time.Millisecond), ps, ps/pf, cs, cs/cf, t.same, t.both)
	fmt.Fprintf(tw, "all cases\tfresh\t%d\t\t%s\t\t%s\t%.0f\t\t%.0f\t\t\n", t.nF, t.sumF.Round(100*time.Millisecond), t.cpuF.Round(100*time.Millisecond), pf, cf)
}

// printPyRuns writes one case's rows; bcode's carries the ratios.
func printPyRuns(tw io.Writer, c pyCase, runs []pyRun, ratio, cpuRatio, agree string) {
	for _, r := range runs {
		if r.err != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", c.name, r.mode, r.err)
			continue
		}
		rr, cr, ag := "", "", ""
		if r.mode == "bcode" {
			rr, cr, ag = ratio, cpuRatio, agree
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%.0f\t%s\t%.0f\t%s\t%s\n", c.name, r.mode, r.counted, verdictCounts(r.rep),
			r.wall.Round(100*time.Millisecond), r.rep.Stats.Run.Round(100*time.Millisecond), r.cpu.Round(100*time.Millisecond),
			r.perMinute(), rr, r.perCPUMinute(), cr, ag)
	}
}

func printPyFloors(stdout io.Writer, floors []pyFloorRow) {
	if len(floors) == 0 {
		return
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "Python floor: one plain pytest of every covering test at the head, the least any tool that runs them pays once after a change;")
	fmt.Fprintln(stdout, "fresh / floor is the best ratio against fresh processes a tool can reach, were everything but that one session free;")
	fmt.Fprintln(stdout, "bcode / floor is what bcode costs in pytest runs (target for a module-sized diff: <= 1.5x), in wall time and in CPU time (user+system of")
	fmt.Fprintln(stdout, "every process each started: on a loaded machine the wall times say as much about the load as about the work). Load: as the case's runs started.")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tmutants\tfloor\tfresh\tbcode\tbest ratio (fresh / floor)\tbcode's ratio (fresh / bcode)\tbcode / floor\tfloor CPU\tbcode CPU\tbcode / floor (CPU)\tload")
	for _, r := range floors {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1fx\t%.1fx\t%.2fx\t%s\t%s\t%.2fx\t%s\n", r.name, r.mutants, r.floor.Round(10*time.Millisecond), r.fresh.Round(10*time.Millisecond), r.bcode.Round(10*time.Millisecond),
			r.fresh.Seconds()/r.floor.Seconds(), r.fresh.Seconds()/r.bcode.Seconds(), r.bcode.Seconds()/r.floor.Seconds(),
			r.floorCPU.Round(10*time.Millisecond), r.bcodeCPU.Round(10*time.Millisecond), r.bcodeCPU.Seconds()/max(r.floorCPU.Seconds(), 1e-3), r.load)
	}
	tw.Flush()
}

// pytestFloor times one plain pytest of the union of the covering tests
// of rep's mutants in dir (the case's head).
func pytestFloor(ctx context.Context, dir string, rep *mutate.Report) (time.Duration, bool) {
	seen := map[string]bool{}
	var ids []string
	for _, m := range rep.Mutants {
		for _, t := range m.Tests {
			if !seen[t] {
				seen[t] = true
				ids = append(ids, t)
			}
		}
	}
	if len(ids) == 0 {
		return 0, false
	}
	cmd := exec.CommandContext(ctx, pytestPython, append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--"}, ids...)...)
	cmd.Dir = dir
	start := time.Now()
	_ = cmd.Run() // a failing test is a result here
	return time.Since(start), ctx.Err() == nil
}

// buildPyCase commits the case's base/ files, then its head/ files over
// them, in a new repository in dir.
func buildPyCase(ctx context.Context, dir string, ar *txtar.Archive) error {
	write := func(prefix string) error {
		for _, f := range ar.Files {
			rest, ok := strings.CutPrefix(f.Name, prefix)
			if !ok {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(rest))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	gitc := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := write("base/"); err != nil {
		return err
	}
	if err := gitc("init", "-q", "-b", "main"); err != nil {
		return err
	}
	if err := gitc("add", "-A"); err != nil {
		return err
	}
	if err := gitc("commit", "-qm", "base"); err != nil {
		return err
	}
	if err := write("head/"); err != nil {
		return err
	}
	if err := gitc("add", "-A"); err != nil {
		return err
	}
	return gitc("commit", "-qm", "head")
}

// runPyMode runs the engine on a case from an empty cache: schemata, or
// with fresh set, one fresh interpreter per mutant (Options.Overlay).
func runPyMode(ctx context.Context, eng *app.Engine, c pyCase, workers int, fresh bool, isolation string, stderr io.Writer) pyRun {
	run := pyRun{mode: "bcode"}
	if fresh {
		run.mode = "fresh"
	}
	start, cpu0 := time.Now(), childCPU()
	change, err := diffChange(ctx, c.dir)
	if err != nil {
		run.err = err.Error()
		return run
	}
	if c.whole != "" {
		data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(c.whole)))
		if err != nil {
			run.err = err.Error()
			return run
		}
		n := strings.Count(string(data), "\n") + 1
		change.Files = []verify.FileChange{{Path: c.whole, Status: verify.Modified, Changed: []verify.LineRange{{Start: 1, End: n}}}}
	}
	cache, err := os.MkdirTemp("", "bcode-bench-cache-")
	if err != nil {
		run.err = err.Error()
		return run
	}
	defer os.RemoveAll(cache)
	res, err := eng.Evidence(ctx, app.EvidenceRequest{Change: change, Dir: c.dir, Runner: host.New(),
		Options: app.EvidenceOptions{Workers: workers, Overlay: fresh, CacheDir: cache, PythonIsolation: isolation}}, verify.NoProgress{})
	rep := res.Report
	run.wall, run.cpu = time.Since(start), childCPU()-cpu0
	if err != nil {
		run.err = oneLineErr(err)
		return run
	}
	run.rep = rep
	for _, m := range rep.Mutants {
		if m.Verdict != mutate.Ignored {
			run.counted++
		}
	}
	fmt.Fprintf(stderr, "   %s: %d mutants in %s (baseline %s, run %s) %v\n", run.mode, run.counted, run.wall.Round(time.Millisecond),
		rep.Stats.Baseline.Round(time.Millisecond), rep.Stats.Run.Round(time.Millisecond), rep.Stats.Verdicts)
	if n := rep.Stats.PythonChildren; n > 0 {
		fmt.Fprintf(stderr, "   %d schema mutants ran in %d forked children\n", rep.Stats.SchemaMutants, n)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "   note: %s\n", n)
	}
	return run
}

// pyAgreement compares verdicts (and killing tests) mutant by mutant.
func pyAgreement(a, b *mutate.Report) (same, both int, diffs []string) {
	byID := map[string]mutate.Mutant{}
	for _, m := range b.Mutants {
		byID[m.ID] = m
	}
	for _, m := range a.Mutants {
		o, ok := byID[m.ID]
		if !ok {
			continue
		}
		both++
		if m.Verdict == o.Verdict {
			same++
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s:%d %s %q: schemata %s, fresh %s (%s)", m.File, m.Line, m.Operator, m.Mutated, m.Verdict, o.Verdict, o.Detail))
	}
	return same, both, diffs
}

func verdictCounts(rep *mutate.Report) string {
	var parts []string
	for _, v := range []mutate.Verdict{mutate.Killed, mutate.Survived, mutate.NotCovered, mutate.Timeout, mutate.NoVerdict} {
		if n := rep.Stats.Verdicts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	return strings.Join(parts, ", ")
}
