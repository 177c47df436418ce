// Package python is the Python mutation engine (a mutate.Engine): an
// embedded engine (pymutate.py) run by the repository's interpreter, the
// one verify/python's adapter chooses. Mutants come from Python's own ast;
// each target module is compiled through an import hook with every mutant
// behind a switch, one pytest collection per worker process, and a forked
// child per batch of mutants runs only the tests whose baseline run
// executed the mutant's line.
package python

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	pyadapter "github.com/bcode-dev/bcode/verify/python"
)

// pyEngine is bcode's Python mutation engine: mutant generation with
// Python's own ast (run as `python -I -S -B pymutate.py gen`: it imports
// nothing of the repository) and the baseline, schema and fresh runs
// (`python -I -B pymutate.py run CONFIG`: the repository's code under pytest).
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
// generator, baseline and workers start together in Finish.
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
	// The baseline needs no mutants: unless the cache holds it, it runs
	// beside the generator, and the schema workers start (and collect)
	// beside it, so a small change does not pay the three one after another.
	key := ps.cacheKey()
	base := ps.cachedBaseline(key)
	var bl *pyBaselineRun
	window := startCPUWindow()
	if base == nil {
		ps.p.Step("Python baseline: running the suite once with per-test line coverage")
		bl = ps.startBaseline(key)
	}
	if err := ps.generate(); err != nil {
		bl.stop()
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
		bl.stop()
	} else {
		ps.rep.Stats.Packages++ // the Python suite: one baseline
		var pre []*pyWorker
		if bl != nil {
			n := 0
			for _, m := range live {
				if ps.schemaCandidate(m) {
					n++
				}
			}
			pre = ps.startWorkers(min(n, ps.opts.Workers, workersBesideBaseline(window)))
		}
		t0 := time.Now()
		if bl != nil {
			<-bl.done
			if bl.err != nil {
				releaseWorkers(pre)
				return bl.err
			}
			base = bl.base
		} else {
			ps.rep.Stats.BaselineCached++
		}
		ps.setBaseline(base)
		ps.rep.Stats.Baseline += time.Since(t0)
		ps.assignCoverage(live)
		t0 = time.Now()
		ps.runMutants(live, pre)
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

// generate asks the interpreter for the mutants of the changed lines.
func (ps *pySession) generate() error {
	type reqFile struct {
		Path   string   `json:"path"`
		Source string   `json:"source"`
		Ranges [][2]int `json:"ranges"`
	}
	var req struct {
		Files []reqFile `json:"files"`
	}
	for _, f := range ps.files {
		rf := reqFile{Path: f.rel, Source: string(f.src)}
		for _, r := range f.ranges {
			rf.Ranges = append(rf.Ranges, [2]int{r.Start, r.End})
		}
		req.Files = append(req.Files, rf)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("mutate: %w", err)
	}
	ps.p.Step("generating Python mutants of %d files", len(ps.files))
	res, err := ps.runner.Run(ps.ctx, sandbox.Command{
		Dir:         filepath.Dir(ps.script),
		Args:        []string{ps.py, "-I", "-S", "-B", ps.script, "gen"},
		Stdin:       bytes.NewReader(body),
		Timeout:     ps.opts.CompileTimeout,
		OutputLimit: 64 << 20,
	})
	if err != nil {
		return fmt.Errorf("mutate: python mutant generator: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut || res.Truncated {
		return fmt.Errorf("mutate: python mutant generator failed (exit %d): %s", res.ExitCode, firstLines(string(res.Stderr), 8))
	}
	var out struct {
		Files []pyGenFile `json:"files"`
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil {
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
	Mode      string     `json:"mode"` // baseline, schema, fresh
	Root      string     `json:"root"`
	Paths     []string   `json:"paths"`
	Targets   []pyTarget `json:"targets"`
	Args      []string   `json:"args"`
	Jobs      []pyJob    `json:"jobs,omitempty"`
	Single    *pySingle  `json:"single,omitempty"`
	Preferred []string   `json:"preferred,omitempty"`
	Results   string     `json:"results"`
	Isolation string     `json:"isolation,omitempty"`
	JobsFile  string     `json:"jobs_file,omitempty"` // schema: where the jobs will appear
	Wait      float64    `json:"wait,omitempty"`      // seconds to wait for them
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

// runBaseline runs the whole suite once with the line tracer and caches
// the result under key. It only reads the session (it runs beside the
// generator).
func (ps *pySession) runBaseline(ctx context.Context, key string) (*pyBaseline, error) {
	t0 := time.Now()
	cfg := pyConfig{Mode: "baseline", Targets: ps.targets(false)}
	first := mutate.BaselineDeadline(0)
	res, out, err := ps.runEngine(ctx, "baseline", cfg, 0, first)
	if mutate.TimedOut(res, err) && ctx.Err() == nil {
		// Once more with the retry's deadline (sandbox.Load).
		l := sandbox.ReadLoad()
		retry := l.RetryDeadline(first, mutate.BaselineFloor, 0)
		t0 = time.Now()
		res, out, err = ps.runEngine(ctx, "baseline", cfg, 0, retry)
		if mutate.TimedOut(res, err) && ctx.Err() == nil {
			return nil, &mutate.TimeoutError{Run: "the python baseline (the whole suite under the line tracer)", First: first, Retry: retry, Load: l}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mutate: python baseline: %w", err)
	}
	wall := time.Since(t0)
	b := &pyBaseline{}
	var sum float64
	for _, line := range bytes.Split(out, []byte("\n")) {
		var t pyTest
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &t) != nil {
			continue
		}
		b.Tests = append(b.Tests, t)
		sum += t.Duration
	}
	if len(b.Tests) == 0 {
		// Exit 5: nothing collected. Anything else is a suite that cannot run.
		if res.ExitCode != 5 {
			return nil, &mutate.BaselineError{Package: "python", Detail: fmt.Sprintf("pytest exited %d: %s", res.ExitCode, firstLines(string(res.Stdout)+string(res.Stderr), 12))}
		}
	}
	b.Overhead = max(wall-time.Duration(sum*float64(time.Second)), 0)
	file := filepath.Join(ps.opts.CacheDir, "pybaseline", key+".json")
	if data, err := json.Marshal(b); err == nil {
		if os.MkdirAll(filepath.Dir(file), 0o755) == nil {
			tmp := file + ".tmp" + strconv.Itoa(os.Getpid())
			if os.WriteFile(tmp, data, 0o644) == nil {
				_ = os.Rename(tmp, file)
			}
		}
	}
	return b, nil
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

// pyBaselineRun is a baseline running beside the generator.
type pyBaselineRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	base   *pyBaseline
	err    error
}

func (ps *pySession) startBaseline(key string) *pyBaselineRun {
	ctx, cancel := context.WithCancel(ps.ctx)
	bl := &pyBaselineRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(bl.done)
		defer cancel()
		bl.base, bl.err = ps.runBaseline(ctx, key)
	}()
	return bl
}

// stop ends a baseline nobody needs and waits for it.
func (bl *pyBaselineRun) stop() {
	if bl == nil {
		return
	}
	bl.cancel()
	<-bl.done
}

// pyWorker is a schema worker process: it imports pytest, collects and then
// waits for its jobs file.
type pyWorker struct {
	tag, jobs string
	cancel    context.CancelFunc
	done      chan struct{}
	started   bool
	expired   atomic.Bool // its budget ran out and it was stopped
	res       sandbox.Result
	out       []byte
	err       error
}

// workerWait is how long a started worker waits for its jobs: as long as
// the baseline may take, its retry included.
func workerWait() time.Duration { return 3 * mutate.BaselineDeadline(0) }

func (ps *pySession) newWorker(tag string) *pyWorker {
	return &pyWorker{tag: tag, jobs: filepath.Join(ps.tmp, "py", tag+".jobs.json"), done: make(chan struct{})}
}

// start runs the worker's process. Its runner timeout only bounds a
// worker that never gets its jobs: assign arms the real budget.
func (ps *pySession) start(w *pyWorker, cfg pyConfig) {
	ctx, cancel := context.WithCancel(ps.ctx)
	w.cancel, w.started = cancel, true
	wait := workerWait()
	cfg.Mode, cfg.JobsFile, cfg.Wait = "schema", w.jobs, wait.Seconds()
	go func() {
		defer close(w.done)
		defer cancel()
		w.res, w.out, w.err = ps.runEngine(ctx, w.tag, cfg, 0, 2*wait+time.Hour)
	}()
}

// schemaConfig is what every schema worker of the session is told.
func (ps *pySession) schemaConfig() pyConfig {
	return pyConfig{Mode: "schema", Targets: ps.targets(true), Preferred: ps.preferred(), Isolation: ps.opts.PythonIsolation}
}

// startWorkers starts n workers that collect the whole suite (the covering
// tests are not known before the baseline ends).
func (ps *pySession) startWorkers(n int) []*pyWorker {
	var out []*pyWorker
	for i := 0; i < n; i++ {
		w := ps.newWorker(fmt.Sprintf("worker%d", i))
		ps.start(w, ps.schemaConfig())
		out = append(out, w)
	}
	return out
}

// assign writes the worker's jobs (atomically: it polls for the file).
func (w *pyWorker) assign(jobs []pyJob) error {
	data, err := json.Marshal(struct {
		Jobs []pyJob `json:"jobs"`
	}{Jobs: append([]pyJob{}, jobs...)})
	if err == nil {
		tmp := w.jobs + ".tmp"
		if err = os.WriteFile(tmp, data, 0o644); err == nil {
			err = os.Rename(tmp, w.jobs)
		}
	}
	if err != nil && w.started {
		w.cancel()
	}
	return err
}

// arm stops the started worker if it runs past budget.
func (w *pyWorker) arm(budget time.Duration) {
	t := time.AfterFunc(budget, func() {
		w.expired.Store(true)
		w.cancel()
	})
	go func() {
		<-w.done
		t.Stop()
	}()
}

// releaseWorkers ends started workers that get no jobs, and waits for them.
func releaseWorkers(ws []*pyWorker) {
	for _, w := range ws {
		_ = w.assign(nil) // on failure assign has stopped it
	}
	for _, w := range ws {
		<-w.done
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

// workersBesideBaseline is idleCPUs; tests pin it to take one path or the
// other whatever the machine's load.
var workersBesideBaseline = idleCPUs

// idleCPUs is how many workers may start beside the running baseline: on a
// busy machine they would only slow it down, and they collect the whole
// suite (the covering tests are not known yet) where a worker started after
// it collects only the covering tests' files.
//
// Busy is read from the kernel's CPU pressure over w, the window in which
// the generator and the baseline ran side by side: when no task waited for
// a CPU then, one is left idle now that the generator is done (up to half
// the CPUs are offered). The one-minute load average, used before and still
// the fallback without /proc/pressure, lags: right after the gate's own
// test runs it said "busy" for a minute on an idle machine, so the worker
// always waited for the baseline there.
func idleCPUs(w cpuWindow) int {
	if f, ok := w.stalled(); ok {
		if f > maxStall {
			return 0
		}
		return min(runtime.NumCPU()-1, max(runtime.NumCPU()/2, 1))
	}
	load, ok := loadAverage()
	if !ok {
		return runtime.NumCPU()
	}
	return max(int(float64(runtime.NumCPU())-load), 0)
}

// maxStall is the share of a window in which some task may have waited for
// a CPU and the machine still counts as having one to spare: on an idle
// machine the generator, the baseline and bcode's own threads stall 5–10%
// of it; one more busy process anywhere makes it close to 100%.
const maxStall = 0.3

// cpuWindow is a start of a window over the kernel's CPU pressure.
type cpuWindow struct {
	at    time.Time
	stall time.Duration // /proc/pressure/cpu "some" total
	ok    bool
}

func startCPUWindow() cpuWindow {
	d, ok := cpuStall()
	return cpuWindow{at: time.Now(), stall: d, ok: ok}
}

// stalled is the share of the window since w in which some task waited
// for a CPU; false without /proc/pressure or with a window under 20 ms.
func (w cpuWindow) stalled() (float64, bool) {
	if !w.ok {
		return 0, false
	}
	d, ok := cpuStall()
	wall := time.Since(w.at)
	if !ok || wall < 20*time.Millisecond {
		return 0, false
	}
	return float64(d-w.stall) / float64(wall), true
}

// pressureFile is the kernel's CPU pressure; a var so tests can move it.
var pressureFile = "/proc/pressure/cpu"

// cpuStall is /proc/pressure/cpu's cumulative "some" stall time.
func cpuStall() (time.Duration, bool) {
	data, err := sandbox.ReadPath(pressureFile, 64<<10)
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "some" {
		return 0, false
	}
	for _, kv := range f[1:] {
		if v, ok := strings.CutPrefix(kv, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond, err == nil
		}
	}
	return 0, false
}

// loadAverage is the one-minute load average, if /proc/loadavg says.
func loadAverage() (float64, bool) {
	data, err := sandbox.ReadPath("/proc/loadavg", 64<<10)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, false
	}
	load, err := strconv.ParseFloat(f[0], 64)
	return load, err == nil
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

// runMutants runs the schema mutants on the workers (pre: already started
// ones; collection once per worker, then batches of mutants per forked
// child) and the rest one fresh process each.
func (ps *pySession) runMutants(live []*pyRun, pre []*pyWorker) {
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
		ps.runSchema(schema, pre)
	} else {
		releaseWorkers(pre)
	}
	mutate.Parallel(ps.opts.Workers, len(fresh), func(i int) {
		ps.runFresh(fresh[i])
	})
}

// schemaBudgets are each schema mutant's budget (CPU time and its
// wall-clock backstop).
type schemaBudgets map[*pyRun]struct{ cpu, wall time.Duration }

// runSchema shards the mutants over the workers, longest first: the
// started ones (pre), or new ones that collect only the covering tests.
func (ps *pySession) runSchema(ms []*pyRun, pre []*pyWorker) {
	budgets := schemaBudgets{}
	for _, m := range ms {
		cpu, wall := ps.schemaBudget(m.Tests)
		budgets[m] = struct{ cpu, wall time.Duration }{cpu, wall}
	}
	shards := ps.shard(ms, len(pre))
	n := len(shards)
	if len(pre) > n {
		releaseWorkers(pre[n:])
		pre = pre[:n]
	}
	var idle []*pyWorker
	for w := range pre {
		if len(shards[w]) == 0 {
			idle = append(idle, pre[w])
		}
	}
	releaseWorkers(idle)
	byK := map[int]*pyRun{}
	for _, m := range ms {
		byK[m.gen.K] = m
	}
	var sum workerSummary
	defer func() {
		ps.rep.Stats.PythonChildren += sum.forks
		if sum.restarts > 0 {
			ps.rep.Notes = append(ps.rep.Notes, fmt.Sprintf("Python schema workers ran %d mutants in %d forked children; %d times a mutant's run changed guarded state and the next mutant got a new child (first: %s)",
				len(ms), sum.forks, sum.restarts, sum.first))
		}
	}()
	mutate.Parallel(n, n, func(w int) {
		if len(shards[w]) == 0 {
			return // released above, or never started
		}
		var wk *pyWorker
		if w < len(pre) {
			wk = pre[w]
		}
		ps.runShard(w, wk, shards[w], budgets, byK, &sum)
	})
}

// shard deals ms over at most Options.Workers workers, longest first onto
// the least loaded, by what each mutant is expected to take. A worker not
// started yet first pays its start and collection (the baseline's
// overhead), so when started workers were started beside the baseline,
// cheap mutants all go to them rather than wait for another to start; a
// shard left empty starts no worker.
func (ps *pySession) shard(ms []*pyRun, started int) [][]*pyRun {
	cost := map[*pyRun]time.Duration{}
	for _, m := range ms {
		cost[m] = ps.testTime(m.Tests) + mutantOverhead
	}
	sort.SliceStable(ms, func(i, j int) bool { return cost[ms[i]] > cost[ms[j]] })
	n := min(ps.opts.Workers, len(ms))
	shards := make([][]*pyRun, n)
	load := make([]time.Duration, n)
	if started > 0 {
		for i := started; i < n; i++ {
			load[i] = ps.base.Overhead
		}
	}
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

// runShard runs one worker's mutants: on wk, a worker started beside the
// baseline, or (nil) on a new one that collects only their covering tests.
func (ps *pySession) runShard(w int, wk *pyWorker, shard []*pyRun, budgets schemaBudgets, byK map[int]*pyRun, sum *workerSummary) {
	// Sorted back into source order: a worker's output reads naturally.
	sort.SliceStable(shard, func(i, j int) bool { return shard[i].gen.K < shard[j].gen.K })
	union := map[string]bool{}
	var jobs []pyJob
	// The worker's own wall budget only ends one that stopped
	// reading its jobs: each job's limits end a runaway mutant.
	budget := 10*ps.base.Overhead + time.Minute
	for _, m := range shard {
		b := budgets[m]
		budget += b.wall + time.Second
		jobs = append(jobs, pyJob{K: m.gen.K, Tests: m.Tests, CPU: b.cpu.Seconds(), Timeout: b.wall.Seconds()})
		for _, t := range m.Tests {
			union[t] = true
		}
	}
	var aerr error
	if wk != nil {
		if aerr = wk.assign(jobs); aerr == nil {
			wk.arm(budget)
		}
	} else {
		// Its jobs are written before it starts: it never waits.
		wk = ps.newWorker(fmt.Sprintf("worker%d", w))
		cfg := ps.schemaConfig()
		for t := range union {
			cfg.Args = append(cfg.Args, t)
		}
		sort.Strings(cfg.Args)
		if aerr = wk.assign(jobs); aerr == nil {
			ps.start(wk, cfg)
			wk.arm(budget)
		}
	}
	if wk.started {
		<-wk.done
	}
	err := wk.err
	if aerr != nil {
		err = aerr
	}
	got := ps.readResults(wk.out, byK, true)
	sum.add(wk.out)
	for _, m := range shard {
		if !got[m.gen.K] {
			m.Verdict, m.Detail = mutate.NoVerdict, unreached(wk, err)
		}
	}
}

// unreached is why a mutant of wk's shard got no result; err is the
// runner's, or the one assigning the jobs met.
func unreached(wk *pyWorker, err error) string {
	switch {
	case wk.expired.Load() || wk.res.TimedOut:
		return "the worker did not reach this mutant within its budget"
	case err != nil:
		return "the runner failed: " + err.Error()
	default:
		return "the worker stopped before this mutant ran: " + lastLine(string(wk.res.Stdout)+string(wk.res.Stderr))
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
