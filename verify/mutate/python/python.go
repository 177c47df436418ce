// Package python is the Python mutation engine (a mutate.Engine): an
// embedded engine (pymutate.py) run by the repository's interpreter, the
// one verify/python's adapter chooses. One interpreter per run generates
// the mutants with Python's own ast, compiles each target module through an
// import hook with every mutant behind a switch and collects the suite
// once; the baseline and the workers are forks of that collected state,
// and a worker's forked child per batch of mutants runs only the tests
// whose baseline run executed the mutant's line.
package python

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	pyadapter "github.com/bcode-dev/bcode/verify/python"
)

// pyEngine is bcode's Python mutation engine, run as
// `python -I -B pymutate.py run CONFIG`: the session (mutant generation with
// Python's own ast, before anything of the repository is imported; then
// the baseline and the schema workers under pytest) and fresh runs.
//
//go:embed pymutate.py
var pyEngine []byte

// Python-only operators.
const (
	OpIdentityNegation   = "identity_negation"   // is <-> is not
	OpMembershipNegation = "membership_negation" // in <-> not in
	OpNoneReturn         = "none_return"         // return x -> return None
)

// Engine mutates Python sources.
type Engine struct{}

// New returns the Python engine.
func New() *Engine { return &Engine{} }

// Language implements mutate.Engine.
func (*Engine) Language() string { return "python" }

// Mutable implements mutate.Engine: Python sources that are not tests or
// test support.
func (*Engine) Mutable(p string) bool {
	return strings.HasSuffix(p, ".py") && !pyTestPath(p)
}

// KillerName implements mutate.Engine: file::name, as pytest's node IDs
// name tests, without parameters.
func (*Engine) KillerName(t verify.Test) string { return killerName(t) }

func killerName(t verify.Test) string {
	f := t.File
	if f == "" {
		f = t.Package
	}
	return f + "::" + t.Name
}

// Prepare implements mutate.Engine. Python prepares nothing ahead: its
// session (generator, baseline and workers in one interpreter) starts in
// Finish.
func (e *Engine) Prepare(ms *mutate.Session) (mutate.Job, error) {
	return &pySession{
		ctx:     ms.Ctx,
		runner:  ms.Runner,
		root:    ms.Root,
		opts:    &ms.Options,
		p:       ms.Progress,
		rep:     ms.Report,
		tmp:     ms.TempDir,
		changed: ms.Files(e),
	}, nil
}

// pyTestPath reports test files and test support: pytest's default test
// file names, conftest.py, and anything below a tests/ or test/ directory.
func pyTestPath(p string) bool {
	b := path.Base(p)
	if b == "conftest.py" || strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py") {
		return true
	}
	for _, part := range strings.Split(path.Dir(p), "/") {
		if part == "tests" || part == "test" {
			return true
		}
	}
	return false
}

// pyMutant is one mutant as the generator reports it.
type pyMutant struct {
	K          int    `json:"k"`
	Func       string `json:"func"`
	Op         string `json:"op"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Line       int    `json:"line"`
	Col        int    `json:"col"`
	EndLine    int    `json:"end_line"`
	EndCol     int    `json:"end_col"`
	Hot        int    `json:"hot"`
	Original   string `json:"original"`
	Mutated    string `json:"mutated"`
	ImportTime bool   `json:"import_time"`
	Pruned     string `json:"pruned"`
	Ignored    string `json:"ignored"`
}

type pyGenFile struct {
	Path     string     `json:"path"`
	Mutants  []pyMutant `json:"mutants"`
	Errors   []string   `json:"errors"`
	SchemaOK bool       `json:"schema_ok"`
}

// pyFile is one changed Python source.
type pyFile struct {
	rel, abs string
	src      []byte
	sum      string
	ranges   []verify.LineRange
	schemaOK bool
	mutants  []*pyRun
}

// pyRun is a mutant and what the engine needs to run it.
type pyRun struct {
	*mutate.Mutant
	gen  pyMutant
	file *pyFile
}

// pyTest is one test of the baseline.
type pyTest struct {
	NodeID   string           `json:"nodeid"`
	File     string           `json:"file"`
	Outcome  string           `json:"outcome"`
	Duration float64          `json:"duration"`
	Lines    map[string][]int `json:"lines"`
}

// pyBaseline is the unmutated suite: every test's outcome, time and the
// target lines it executes. Overhead is the run's wall time beyond its
// tests (interpreter start, imports, collection).
type pyBaseline struct {
	Tests    []pyTest      `json:"tests"`
	Overhead time.Duration `json:"overhead_ns"`
}

// pySession is the Python half of a mutate.Run.
type pySession struct {
	ctx    context.Context
	runner sandbox.Runner
	root   string // the head snapshot, absolute
	// opts are the run's: Finish sets their Tests.
	opts    *mutate.Options
	p       verify.Progress
	rep     *mutate.Report
	tmp     string
	changed []verify.FileChange // mutate.Session.Files
	py      string
	script  string
	files   []*pyFile
	base    *pyBaseline
	byNode  map[string]*pyTest
}

// Finish implements mutate.Job: it mutates the change's Python sources.
func (ps *pySession) Finish() error {
	for _, f := range ps.changed {
		abs := filepath.Join(ps.root, filepath.FromSlash(f.Path))
		src, err := mutate.ReadBeneath(ps.root, abs, maxSourceFile)
		if err != nil {
			ps.rep.Errors = append(ps.rep.Errors, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		sum := sha256.Sum256(src)
		ps.files = append(ps.files, &pyFile{rel: f.Path, abs: abs, src: src, sum: hex.EncodeToString(sum[:]), ranges: f.Changed})
	}
	if len(ps.files) == 0 {
		return nil
	}
	return ps.run()
}

func (ps *pySession) run() error {
	py, err := ps.interpreter()
	if err != nil {
		return err
	}
	ps.py = py
	dir := filepath.Join(ps.tmp, "py")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mutate: %w", err)
	}
	ps.script = filepath.Join(dir, "pymutate.py")
	if err := os.WriteFile(ps.script, pyEngine, 0o644); err != nil {
		return fmt.Errorf("mutate: %w", err)
	}
	// The gate's bootstrap, beside the script: pymutate.py imports pytest
	// and puts the snapshot on sys.path by its rule.
	if err := os.WriteFile(filepath.Join(dir, "bcode_pytest_boot.py"), pyadapter.PytestBoot(), 0o644); err != nil {
		return fmt.Errorf("mutate: %w", err)
	}
	// One interpreter generates, collects once and forks every run off
	// the collected state: the baseline (unless the cache holds it), then
	// the schema workers.
	key := ps.cacheKey()
	base := ps.cachedBaseline(key)
	first := mutate.BaselineDeadline(0)
	if base == nil {
		ps.p.Step("generating Python mutants of %d files; the baseline runs the suite once with per-test line coverage", len(ps.files))
	} else {
		ps.p.Step("generating Python mutants of %d files", len(ps.files))
	}
	proc, err := ps.startProc(base == nil, first)
	if err != nil {
		return err
	}
	if err := ps.generate(proc); err != nil {
		proc.stop()
		return err
	}
	var live []*pyRun
	for _, f := range ps.files {
		for _, m := range f.mutants {
			if m.Verdict == "" {
				live = append(live, m)
			}
		}
	}
	if len(live) == 0 {
		proc.stop() // it ends by itself: nothing to run
	} else {
		ps.rep.Stats.Packages++ // the Python suite: one baseline
		t0 := time.Now()
		if base == nil {
			b, err := ps.awaitBaseline(proc, key, first)
			if err != nil {
				proc.stop()
				if ps.ctx.Err() != nil {
					return ps.ctx.Err()
				}
				return err
			}
			base = b
		} else {
			ps.rep.Stats.BaselineCached++
		}
		ps.setBaseline(base)
		ps.rep.Stats.Baseline += time.Since(t0)
		ps.assignCoverage(live)
		t0 = time.Now()
		ps.runMutants(live, proc)
		ps.rep.Stats.Run += time.Since(t0)
	}
	for _, f := range ps.files {
		for _, m := range f.mutants {
			ps.rep.Mutants = append(ps.rep.Mutants, *m.Mutant)
		}
		if len(f.mutants) > 0 {
			ps.rep.Sources[f.rel] = string(f.src)
		}
	}
	ps.locateTests()
	return ps.ctx.Err()
}

// interpreter is Options.PythonFor's choice, else the one verify/python's
// adapter makes for Options.Python (python.Chooser): the gate passes its
// adapter's own chooser, and every other caller gets the same rule, so
// there is one place that chooses the Python that runs pytest.
func (ps *pySession) interpreter() (string, error) {
	choose := ps.opts.PythonFor
	if choose == nil {
		choose = pyadapter.Chooser(ps.opts.Python, "")
	}
	py, err := choose(ps.ctx, ps.runner, ps.root)
	if err != nil && ps.ctx.Err() != nil {
		return "", ps.ctx.Err()
	}
	return py, err // the chooser's error says what to install
}

// genRequest is what the generator is asked: the changed files' sources
// and changed lines.
func (ps *pySession) genRequest() pyGenRequest {
	var req pyGenRequest
	for _, f := range ps.files {
		rf := pyGenRequestFile{Path: f.rel, Source: string(f.src)}
		for _, r := range f.ranges {
			rf.Ranges = append(rf.Ranges, [2]int{r.Start, r.End})
		}
		req.Files = append(req.Files, rf)
	}
	return req
}

// generate reads the mutants of the changed lines, which the session
// generates first (with Python's own ast, before it imports anything of the
// repository).
func (ps *pySession) generate(p *pyProc) error {
	data, err := p.await(p.gen, ps.opts.CompileTimeout)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("mutate: python mutant generator: no answer within %s", ps.opts.CompileTimeout)
	case errors.Is(err, errSessionEnded) && ps.ctx.Err() != nil:
		return ps.ctx.Err()
	case errors.Is(err, errSessionEnded):
		return fmt.Errorf("mutate: python mutant generator failed (exit %d): %s", p.res.ExitCode, firstLines(string(p.res.Stderr), 8))
	case err != nil:
		return fmt.Errorf("mutate: python mutant generator: %w", err)
	}
	var out struct {
		Files []pyGenFile `json:"files"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("mutate: python mutant generator: reading its output: %w", err)
	}
	if len(out.Files) != len(ps.files) {
		return fmt.Errorf("mutate: python mutant generator answered for %d of %d files", len(out.Files), len(ps.files))
	}
	for i, gf := range out.Files {
		f := ps.files[i]
		f.schemaOK = gf.SchemaOK
		ps.rep.Errors = append(ps.rep.Errors, gf.Errors...)
		if !gf.SchemaOK {
			ps.rep.Notes = append(ps.rep.Notes, fmt.Sprintf("schema of %s did not compile; its mutants run one fresh process each", f.rel))
		}
		seen := mutate.IDs{}
		for _, g := range gf.Mutants {
			m := &mutate.Mutant{
				File: f.rel, Func: g.Func, Line: g.Line, Col: g.Col, EndLine: g.EndLine, EndCol: g.EndCol,
				Operator: g.Op, Original: g.Original, Mutated: g.Mutated,
			}
			seen.Assign(m)
			ps.rep.Stats.Generated++
			switch {
			case g.Pruned != "":
				m.Verdict, m.Detail = mutate.Pruned, g.Pruned
				ps.rep.Pruned = append(ps.rep.Pruned, *m)
				continue
			case g.Ignored != "":
				m.Verdict, m.IgnoreReason = mutate.Ignored, g.Ignored
			}
			f.mutants = append(f.mutants, &pyRun{Mutant: m, gen: g, file: f})
		}
	}
	return nil
}

// pyConfig is what a `pymutate.py run` process reads.
type pyConfig struct {
	Mode      string     `json:"mode"` // session, fresh
	Root      string     `json:"root"`
	Paths     []string   `json:"paths"`
	Targets   []pyTarget `json:"targets"`
	Args      []string   `json:"args"`
	Single    *pySingle  `json:"single,omitempty"`
	Preferred []string   `json:"preferred,omitempty"`
	Results   string     `json:"results"`
	Isolation string     `json:"isolation,omitempty"`
}

type pyTarget struct {
	Rel     string     `json:"rel"`
	Abs     string     `json:"abs"`
	Sum     string     `json:"sha256"`
	Mutants []pyMutant `json:"mutants,omitempty"`
}

type pyJob struct {
	K       int      `json:"k"`
	Tests   []string `json:"tests"`
	CPU     float64  `json:"cpu"`     // seconds of CPU time the mutant's run may use
	Timeout float64  `json:"timeout"` // seconds of wall time, for a run that waits instead
	All     bool     `json:"all,omitempty"`
}

type pySingle struct {
	K       int    `json:"k"`
	Path    string `json:"path"`
	Start   int    `json:"start"`
	End     int    `json:"end"`
	Mutated string `json:"mutated"`
}

// pyResult is one job's outcome, or (K 0) a worker's summary.
type pyResult struct {
	K        int      `json:"k"`
	Forks    int      `json:"forks"`
	Restarts []string `json:"restarts"`
	Restart  int      `json:"restart_count"`
	Verdict  string   `json:"verdict"`
	KilledBy string   `json:"killed_by"`
	Detail   string   `json:"detail"`
	Duration float64  `json:"duration"`
	Failed   []string `json:"failed"`
}

// paths are the snapshot's import roots: src/ (a src layout), then the
// snapshot itself, ahead of anything installed.
func (ps *pySession) paths() []string {
	var out []string
	if fi, err := os.Stat(filepath.Join(ps.root, "src")); err == nil && fi.IsDir() {
		out = append(out, filepath.Join(ps.root, "src"))
	}
	return append(out, ps.root)
}

func (ps *pySession) targets(withMutants bool) []pyTarget {
	var out []pyTarget
	for _, f := range ps.files {
		t := pyTarget{Rel: f.rel, Abs: f.abs, Sum: f.sum}
		if withMutants && f.schemaOK {
			for _, m := range f.mutants {
				if m.gen.K > 0 {
					t.Mutants = append(t.Mutants, m.gen)
				}
			}
		}
		out = append(out, t)
	}
	return out
}

// runEngine runs one `pymutate.py run` process and returns its records.
// cpu, when set, is the process's CPU limit (sandbox.Command.CPULimit).
func (ps *pySession) runEngine(ctx context.Context, tag string, cfg pyConfig, cpu, timeout time.Duration) (sandbox.Result, []byte, error) {
	dir := filepath.Join(ps.tmp, "py")
	cfg.Root = ps.root
	cfg.Paths = ps.paths()
	cfg.Results = filepath.Join(dir, tag+".jsonl")
	data, err := json.Marshal(cfg)
	if err != nil {
		return sandbox.Result{}, nil, err
	}
	cfgPath := filepath.Join(dir, tag+".json")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return sandbox.Result{}, nil, err
	}
	res, err := ps.runner.Run(ctx, sandbox.Command{
		Dir:         ps.root,
		Args:        []string{ps.py, "-I", "-B", ps.script, "run", cfgPath},
		CPULimit:    cpu,
		Timeout:     timeout,
		OutputLimit: 1 << 20,
	})
	if err != nil {
		return res, nil, err
	}
	out, err := sandbox.ReadPath(cfg.Results, maxResults)
	if _, refused := sandbox.Refused(err); refused {
		return res, nil, err
	}
	return res, out, nil
}

// cachedBaseline is the baseline the cache holds for key (the content of
// every file of the snapshot, the interpreter and the engine), or nil.
func (ps *pySession) cachedBaseline(key string) *pyBaseline {
	if ps.opts.NoCache {
		return nil
	}
	data, err := sandbox.ReadPath(filepath.Join(ps.opts.CacheDir, "pybaseline", key+".json"), maxCacheEntry)
	if err != nil {
		return nil
	}
	var b pyBaseline
	if json.Unmarshal(data, &b) != nil {
		return nil
	}
	return &b
}

func (ps *pySession) setBaseline(b *pyBaseline) {
	ps.base = b
	ps.byNode = map[string]*pyTest{}
	var red []string
	for i := range b.Tests {
		t := &b.Tests[i]
		ps.byNode[t.NodeID] = t
		if t.Outcome == "failed" {
			red = append(red, t.NodeID)
		}
	}
	if len(red) > 0 {
		sort.Strings(red)
		more := ""
		if len(red) > 5 {
			more = fmt.Sprintf(" and %d more", len(red)-5)
			red = red[:5]
		}
		ps.rep.Notes = append(ps.rep.Notes, fmt.Sprintf("tests that fail on the unmutated code are not run against mutants: %s%s", strings.Join(red, ", "), more))
	}
}

// maxHashed bounds what the cache key reads of a snapshot.
const maxHashed = 256 << 20

func (ps *pySession) cacheKey() string {
	h := sha256.New()
	eng := sha256.Sum256(pyEngine)
	fmt.Fprintf(h, "bcode-pybaseline-v1\x00%s\x00%x\x00", ps.py, eng)
	for _, f := range ps.files {
		fmt.Fprintf(h, "target\x00%s\x00", f.rel)
	}
	var total int64
	_ = mutate.WalkBeneath(ps.root, ps.root, func(p string, d fs.DirEntry) error {
		if d.IsDir() {
			if p != ps.root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || total+fi.Size() > maxHashed {
			return nil
		}
		total += fi.Size()
		data, err := mutate.ReadBeneath(ps.root, p, max(maxHashed-total+fi.Size(), 1))
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(ps.root, p)
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s\x00%x\x00", filepath.ToSlash(rel), sum)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// assignCoverage gives each mutant the passing baseline tests that execute
// one of its lines (for module-level code: any line of its file).
func (ps *pySession) assignCoverage(live []*pyRun) {
	for _, m := range live {
		var tests []string
		for _, t := range ps.base.Tests {
			if t.Outcome != "passed" {
				continue
			}
			lines := t.Lines[m.File]
			// Module-level code runs at import, before any test: a test
			// that uses the module at all is one that could notice.
			if m.gen.ImportTime && len(lines) > 0 || coversLines(lines, m.gen) {
				tests = append(tests, t.NodeID)
			}
		}
		if len(tests) == 0 {
			m.Verdict, m.Detail = mutate.NotCovered, "no passing test executes this line"
			continue
		}
		m.Tests = tests
	}
}

func coversLines(lines []int, g pyMutant) bool {
	for _, l := range lines {
		if l == g.Hot || (l >= g.Line && l <= g.EndLine) {
			return true
		}
	}
	return false
}

// freshBudget is a mutant's budget in a fresh process, in CPU time (the
// kernel's limit, see mutantBudget): ten times its tests' baseline time
// plus five seconds (Go's engine adds two: a Python test that fails spends
// longer than a passing one formatting its report), plus three times the
// baseline's start and collection, which a fresh process repeats. wall
// only ends a run that waits instead of working.
func (ps *pySession) freshBudget(tests []string) (cpu, wall time.Duration) {
	return mutate.Budget(10*ps.testTime(tests)+5*time.Second+3*ps.base.Overhead, ps.opts.RunTimeout)
}

// schemaBudget is a mutant's budget in a schema worker, counted from the
// moment its tests start in an interpreter that has already imported and
// collected: ten times its tests' baseline time plus one second of CPU
// time, which the worker measures for its child from the kernel's
// accounting (see pymutate.py's Schemata), and a wall time only for a run
// that waits. CPU time is the work done, not the time spent waiting for a
// core: a busy machine does not turn a slow kill into a timeout.
func (ps *pySession) schemaBudget(tests []string) (cpu, wall time.Duration) {
	return mutate.Budget(10*ps.testTime(tests)+time.Second, ps.opts.RunTimeout)
}

// testTime is the tests' summed baseline time (measured under the line
// tracer, so above their plain run time).
func (ps *pySession) testTime(tests []string) time.Duration {
	var sum float64
	for _, t := range tests {
		if bt, ok := ps.byNode[t]; ok {
			sum += bt.Duration
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// preferred are the change's own Python tests as file::name.
func (ps *pySession) preferred() []string {
	var out []string
	for _, t := range ps.opts.Tests {
		if t.Language == "python" {
			out = append(out, killerName(t))
		}
	}
	return out
}

// schemaCandidate says whether m would run on a schema worker.
func (ps *pySession) schemaCandidate(m *pyRun) bool {
	return !ps.opts.Overlay && !m.gen.ImportTime && m.file.schemaOK
}

// runMutants runs the schema mutants on workers forked off the session
// (batches of mutants per forked child) and the rest one fresh process
// each.
func (ps *pySession) runMutants(live []*pyRun, proc *pyProc) {
	var schema, fresh []*pyRun
	for _, m := range live {
		if m.Verdict != "" {
			continue
		}
		if ps.schemaCandidate(m) {
			schema = append(schema, m)
		} else {
			fresh = append(fresh, m)
		}
	}
	ps.p.Step("running %d Python mutants on %d workers", len(schema)+len(fresh), ps.opts.Workers)
	if len(schema) > 0 {
		ps.runSchema(schema, proc)
	} else {
		proc.release()
	}
	mutate.Parallel(ps.opts.Workers, len(fresh), func(i int) {
		ps.runFresh(fresh[i])
	})
}

// runSchema shards the mutants over the workers, longest first, sends the
// shards to the session, which forks one worker per shard off its
// collected state, and reads each worker's results.
func (ps *pySession) runSchema(ms []*pyRun, proc *pyProc) {
	byK := map[int]*pyRun{}
	for _, m := range ms {
		byK[m.gen.K] = m
	}
	shards := ps.shard(ms)
	var cmd []pyShard
	// The session's wall budget only ends one that stopped reading its
	// jobs: each job's limits end a runaway mutant. Its workers run side
	// by side, so the longest shard's budget is the session's.
	var budget time.Duration
	for w, shard := range shards {
		// Sorted back into source order: a worker's output reads naturally.
		sort.SliceStable(shard, func(i, j int) bool { return shard[i].gen.K < shard[j].gen.K })
		sb := 10*ps.base.Overhead + time.Minute
		sh := pyShard{Results: filepath.Join(ps.tmp, "py", fmt.Sprintf("worker%d.jsonl", w))}
		for _, m := range shard {
			cpu, wall := ps.schemaBudget(m.Tests)
			sb += wall + time.Second
			sh.Jobs = append(sh.Jobs, pyJob{K: m.gen.K, Tests: m.Tests, CPU: cpu.Seconds(), Timeout: wall.Seconds()})
		}
		budget = max(budget, sb)
		cmd = append(cmd, sh)
	}
	err := proc.send(map[string]any{"shards": cmd})
	if err == nil {
		proc.arm(budget)
	}
	<-proc.done
	if err == nil {
		err = proc.err
	}
	var sum workerSummary
	for w, sh := range cmd {
		out, rerr := sandbox.ReadPath(sh.Results, maxResults)
		if _, refused := sandbox.Refused(rerr); refused {
			out = nil
		}
		got := ps.readResults(out, byK, true)
		sum.add(out)
		for _, m := range shards[w] {
			if !got[m.gen.K] {
				m.Verdict, m.Detail = mutate.NoVerdict, unreached(proc, err)
			}
		}
	}
	ps.rep.Stats.PythonChildren += sum.forks
	if sum.restarts > 0 {
		ps.rep.Notes = append(ps.rep.Notes, fmt.Sprintf("Python schema workers ran %d mutants in %d forked children; %d times a mutant's run changed guarded state and the next mutant got a new child (first: %s)",
			len(ms), sum.forks, sum.restarts, sum.first))
	}
}

// shard deals ms over at most Options.Workers workers, longest first onto
// the least loaded, by what each mutant is expected to take. Every worker
// is a fork of the collected session, so none pays a start first.
func (ps *pySession) shard(ms []*pyRun) [][]*pyRun {
	cost := map[*pyRun]time.Duration{}
	for _, m := range ms {
		cost[m] = ps.testTime(m.Tests) + mutantOverhead
	}
	sort.SliceStable(ms, func(i, j int) bool { return cost[ms[i]] > cost[ms[j]] })
	n := min(max(ps.opts.Workers, 1), len(ms))
	shards := make([][]*pyRun, n)
	load := make([]time.Duration, n)
	for _, m := range ms {
		best := 0
		for i := range load {
			if load[i] < load[best] {
				best = i
			}
		}
		shards[best] = append(shards[best], m)
		load[best] += cost[m]
	}
	return shards
}

// unreached is why a mutant of a worker's shard got no result; err is the
// runner's, or the one sending the jobs met.
func unreached(p *pyProc, err error) string {
	switch {
	case p.expired.Load() || p.res.TimedOut:
		return "the worker did not reach this mutant within its budget"
	case err != nil:
		return "the runner failed: " + err.Error()
	default:
		return "the worker stopped before this mutant ran: " + lastLine(string(p.res.Stdout)+string(p.res.Stderr))
	}
}

// mutantOverhead is a schema mutant's expected cost beside its tests' time
// (setting the switch, the state check, the report), for sharding.
const mutantOverhead = 10 * time.Millisecond

// workerSummary adds up the schema workers' closing records.
type workerSummary struct {
	mu              sync.Mutex
	forks, restarts int
	first           string
}

func (s *workerSummary) add(out []byte) {
	for _, line := range bytes.Split(out, []byte("\n")) {
		var r pyResult
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil || r.K != 0 {
			continue
		}
		s.mu.Lock()
		s.forks += r.Forks
		s.restarts += r.Restart
		if s.first == "" && len(r.Restarts) > 0 {
			s.first = r.Restarts[0]
		}
		s.mu.Unlock()
	}
}

// runFresh runs one mutant, applied as text, in a fresh interpreter: the
// path for import-time mutants, and the honest per-mutant baseline.
func (ps *pySession) runFresh(m *pyRun) {
	start := time.Now()
	cfg := pyConfig{
		Mode:      "fresh",
		Targets:   ps.targets(false),
		Args:      m.Tests,
		Preferred: ps.preferred(),
		Single:    &pySingle{K: m.gen.K, Path: m.File, Start: m.gen.Start, End: m.gen.End, Mutated: m.gen.Mutated},
	}
	cpu, wall := ps.freshBudget(m.Tests)
	res, out, err := ps.runEngine(ps.ctx, "fresh"+strconv.Itoa(m.gen.K), cfg, cpu, wall)
	got := ps.readResults(out, map[int]*pyRun{m.gen.K: m}, false)
	m.Duration = time.Since(start)
	switch {
	case err != nil && ps.ctx.Err() != nil:
		m.Verdict, m.Detail = mutate.NoVerdict, "the run was cancelled"
	case err != nil:
		m.Verdict, m.Detail = mutate.NoVerdict, "the runner failed: "+err.Error()
	case res.CPULimited && (!got[m.gen.K] || m.Verdict == mutate.Survived):
		m.Verdict, m.KilledBy = mutate.Timeout, ""
		m.Detail = fmt.Sprintf("the covering tests used %ds of CPU time without finishing (10x their baseline time + 5s, and 3x the start and collection)", sandbox.CPULimitSeconds(cpu))
	case res.TimedOut && (!got[m.gen.K] || m.Verdict == mutate.Survived):
		m.Verdict, m.KilledBy = mutate.Timeout, ""
		m.Detail = fmt.Sprintf("the covering tests waited %s without finishing (they were blocked, not working)", wall.Round(time.Millisecond))
	case !got[m.gen.K]:
		m.Verdict, m.Detail = mutate.NoVerdict, "the test process died: "+lastLine(string(res.Stdout)+string(res.Stderr))
	}
}

// readResults applies the records in out to the mutants by number and
// says which got one.
func (ps *pySession) readResults(out []byte, byK map[int]*pyRun, schema bool) map[int]bool {
	got := map[int]bool{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		var r pyResult
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil {
			continue
		}
		m, ok := byK[r.K]
		if !ok {
			continue
		}
		got[r.K] = true
		m.Schema = schema
		if schema {
			m.Duration = time.Duration(r.Duration * float64(time.Second))
		}
		m.Detail = r.Detail
		switch r.Verdict {
		case "killed":
			m.Verdict, m.KilledBy = mutate.Killed, stripParams(r.KilledBy)
		case "survived":
			m.Verdict = mutate.Survived
		case "timeout":
			m.Verdict = mutate.Timeout
		case "crash":
			// A dead interpreter is not evidence a test checks anything.
			m.Verdict = mutate.NoVerdict
		default:
			m.Verdict = mutate.NoVerdict
			if m.Detail == "" {
				m.Detail = "the run failed"
			}
		}
	}
	return got
}

// stripParams turns a pytest node ID into the test's name (file::name), the
// form the gate credits.
func stripParams(nodeid string) string {
	if i := strings.IndexByte(nodeid, '['); i >= 0 {
		return nodeid[:i]
	}
	return nodeid
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// locateTests records the test file of every test a report names, so the
// mutation-testing report can show it.
func (ps *pySession) locateTests() {
	for _, m := range ps.rep.Mutants {
		if !strings.HasSuffix(m.File, ".py") {
			continue
		}
		names := append([]string(nil), m.Tests...)
		if m.KilledBy != "" {
			names = append(names, m.KilledBy)
		}
		for _, n := range names {
			file, _, ok := strings.Cut(n, "::")
			if !ok {
				continue
			}
			ps.rep.TestFiles[path.Dir(m.File)+":"+n] = file
			if _, ok := ps.rep.Sources[file]; !ok {
				if src, err := mutate.ReadBeneath(ps.root, filepath.Join(ps.root, filepath.FromSlash(file)), maxTestSource); err == nil {
					ps.rep.Sources[file] = string(src)
				}
			}
		}
	}
}
