// Package mutate produces mutation evidence for a change: small wrong
// versions (mutants) of the changed code, each run against the tests that
// cover it, so a person sees which wrong versions no test notices.
//
// The package is the part every language shares: the options, the report
// and its renderings, the gate's hooks, and the run that hands the
// change's files to the language engines (Engine) and sorts and counts
// what they found. The engines are verify/mutate/golang (mutant schemata:
// every mutant of a package compiled into one test binary behind a
// switch) and verify/mutate/python (an embedded engine run by the
// repository's interpreter); verify/mutate/mutatetest is the suite every
// engine passes.
package mutate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify"
)

// Verdict is what running a mutant showed: verify.MutantVerdict, named
// here so the engine's files read as they always did.
type Verdict = verify.MutantVerdict

// The verdicts, as verify defines them.
const (
	Killed     = verify.MutantKilled
	Survived   = verify.MutantSurvived
	NotCovered = verify.MutantNotCovered
	Timeout    = verify.MutantTimeout
	Unviable   = verify.MutantUnviable
	Ignored    = verify.MutantIgnored
	NoVerdict  = verify.MutantNoVerdict
	Pruned     = verify.MutantPruned
)

// Operator names.
const (
	OpConditionalBoundary = "conditional_boundary" // < <-> <=, > <-> >=
	OpRelationalNegation  = "relational_negation"  // == <-> !=, < -> >=, ...
	OpConditionNegation   = "condition_negation"   // c -> !c in if/for/&&/||
	OpConstantBound       = "constant_bound"       // integer constant +-1 in a comparison, index or slice
	OpArithIndex          = "arith_index"          // + <-> - in index and length arithmetic
	OpBoolLiteral         = "bool_literal"         // return true <-> return false
)

// Mutant is verify.Mutant, the one mutant type: the report, the gate's
// summary and every surface hold the same values.
type Mutant = verify.Mutant

// Options tune a run.
type Options struct {
	// Engines are the language engines that mutate the change's files, in
	// the order they run; a file goes to the first whose Mutable says so.
	// engine/check's EvidenceOptions fills them, so every surface runs the
	// same ones.
	Engines []Engine
	// Workers run mutants in parallel; 0 means runtime.NumCPU().
	Workers int
	// CompileTimeout bounds each build (0: config.DefaultCompileTimeout).
	// RunTimeout, when set, caps the per-mutant run budget derived from the
	// baseline: its CPU time and its wall-clock time alike (so, unlike the
	// derived budget, a cap a busy machine can reach first).
	CompileTimeout, RunTimeout time.Duration
	// Reach also mutates the functions the change's new or modified tests
	// (Tests) cover, not only the changed lines.
	Reach bool
	// Tests are the change's new or modified tests.
	Tests []verify.Test
	// Overlay forces the per-mutant `go test -overlay` fallback for every
	// mutant (for benchmarks and comparison).
	Overlay bool
	// PerProcessBaseline runs every baseline test in a process of its own
	// from a separate coverage binary, as packages with their own TestMain
	// must (for benchmarks and comparison).
	PerProcessBaseline bool
	// Files restricts mutation to these changed files (repository-relative,
	// slash-separated); empty means every changed file.
	Files []string
	// CacheDir holds baseline coverage; empty means bcode's cache
	// directory (sandbox.CacheDir). NoCache disables reading it.
	CacheDir string
	NoCache  bool
	// TempDir is where test binaries, overlays and coverage profiles are
	// written; "" is the system's temporary directory. A sandboxed runner
	// that can write below one directory only needs it there.
	TempDir string
	// Python is the interpreter for Python mutants (gate.python); empty
	// means the one verify/python's adapter chooses (the first of the
	// snapshot's .venv, python3 and /usr/bin/python3 that imports pytest).
	Python string
	// PythonFor, when set, chooses the interpreter instead (Python is then
	// ignored): the gate passes its Python adapter's choice, so mutants run
	// under the interpreter its test runs used (the user's checkout .venv
	// included) and the probe's answer kept on disk serves both.
	PythonFor func(ctx context.Context, r sandbox.Runner, dir string) (string, error)
	// Checkout is the user's checkout on the host ("" none: an agent's
	// worktree, a container): the dependencies installed there
	// (node_modules) serve the mutants' runs as they serve the gate's.
	Checkout string
	// PythonIsolation is how a Python schema worker separates mutants:
	// PythonIsolateState (the default, "") or PythonIsolateFork.
	PythonIsolation string
}

// Python schema workers' isolation levels (Options.PythonIsolation).
const (
	// PythonIsolateState runs mutants one after another in a forked child
	// and forks a new child, from the collected state, as soon as a
	// mutant's run changed the state bcode guards (the repository's modules'
	// globals one container and one object deep, their classes, caches and
	// function defaults, os.environ, cwd, sys.path, sys.modules, threads,
	// descriptors, signal handlers, logging and warnings setup). Every
	// timeout or crash also ends the child.
	PythonIsolateState = "state"
	// PythonIsolateFork forks a child per mutant.
	PythonIsolateFork = "fork"
)

// Stats are the counts and timings of a run.
type Stats struct {
	Generated int             `json:"generated"` // mutants found on the selected lines, before pruning
	Pruned    int             `json:"pruned"`    // dropped by go/types: cannot build or cannot differ
	Verdicts  map[Verdict]int `json:"verdicts"`
	Packages  int             `json:"packages"` // Go packages, plus one for a Python suite
	// SchemaMutants ran from a package's single schema binary;
	// OverlayMutants needed a build of their own.
	SchemaMutants  int `json:"schema_mutants"`
	OverlayMutants int `json:"overlay_mutants"`
	// PythonChildren are the children Python schema workers forked: one per
	// batch of mutants (Options.PythonIsolation).
	PythonChildren int `json:"python_children,omitempty"`
	// BaselineCached counts packages whose baseline came from the cache.
	BaselineCached int `json:"baseline_cached"`
	// BaselineInProcess counts packages whose baseline ran every test in
	// one process of the schema binary (the others: a process per test).
	BaselineInProcess int `json:"baseline_in_process"`
	// BaselineKept counts tests that kept their per-test coverage across a
	// save that only edited function bodies (they reached none of them);
	// BaselineRerun the tests of such saves that ran again.
	BaselineKept  int `json:"baseline_kept,omitempty"`
	BaselineRerun int `json:"baseline_rerun,omitempty"`
	// SchemaCached counts packages whose schema binary came from the cache
	// (nothing of the package or its mutants changed since it was built).
	SchemaCached int `json:"schema_cached"`
	// ListCached counts `go list` calls (two per module: its changed
	// packages, and export data of their imports) answered from the cache
	// (nothing they depend on changed since).
	ListCached int           `json:"list_cached"`
	Baseline   time.Duration `json:"baseline_ns"`
	// Compile is the schema builds' wall time plus the summed time of
	// per-mutant builds (those overlap with runs on other workers).
	Compile time.Duration `json:"compile_ns"`
	Run     time.Duration `json:"run_ns"` // wall time of the mutant-run phase
	Wall    time.Duration `json:"wall_ns"`
	// MutantsPerMinute is the number of mutants given a verdict by running
	// or by coverage (everything but ignored) per minute of wall time.
	MutantsPerMinute float64 `json:"mutants_per_minute"`
}

// Report is the result of a run.
type Report struct {
	Mutants []Mutant `json:"mutants"`
	// Pruned lists the mutants go/types dropped, with the reason in Detail.
	Pruned []Mutant `json:"pruned,omitempty"`
	// Quarantined names baseline tests whose runs disagreed (flaky); they
	// are not used against mutants.
	Quarantined []string `json:"quarantined,omitempty"`
	// Errors are problems that did not stop the run: a package that does
	// not type-check, a //bcode:ignore-mutant without a reason.
	Errors []string `json:"errors,omitempty"`
	// Notes are facts about how the run went that need no action (a schema
	// that did not build, so its mutants took the slower path).
	Notes []string `json:"notes,omitempty"`
	Stats Stats    `json:"stats"`
	// Sources holds the head content of every file with mutants, for the
	// mutation-testing report (which embeds the source).
	Sources map[string]string `json:"-"`
	// TestFiles maps "dir:TestName" (dir repository-relative, "." for the
	// root) to the test file that declares the test, so reports can name
	// the file a killing test lives in; its source is in Sources too.
	TestFiles map[string]string `json:"-"`
	// Languages maps every file with mutants to the language of the
	// engine that mutated it (Engine.Language), for the mutation-testing
	// report.
	Languages map[string]string `json:"-"`
}

// Survivors returns the mutants that survived.
func (r *Report) Survivors() []Mutant {
	var out []Mutant
	for _, m := range r.Mutants {
		if m.Verdict == Survived {
			out = append(out, m)
		}
	}
	return out
}

// BaselineError reports that the unmutated code fails its own tests, so no
// mutant verdict would mean anything.
type BaselineError struct {
	Package string
	Failed  []string
	Detail  string
}

func (e *BaselineError) Error() string {
	if len(e.Failed) == 0 {
		return fmt.Sprintf("baseline of %s is red: %s", e.Package, e.Detail)
	}
	return fmt.Sprintf("baseline of %s is red: failing tests %s", e.Package, strings.Join(e.Failed, ", "))
}

// Run generates the mutants of change in dir (a clean snapshot of its head)
// with Options.Engines, runs them, and returns the report. The error is for
// failures that leave no meaningful report: no engine, a missing
// toolchain, a red baseline, cancellation.
func Run(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change, opts Options, p verify.Progress) (*Report, error) {
	pr, err := Prepare(ctx, r, dir, change, opts, p)
	if err != nil {
		return nil, err
	}
	return pr.Finish(opts.Tests)
}

// Prepared is a Run whose engines have prepared (for Go: packages loaded,
// mutants found, test binaries built) but none of whose tests ran (except
// with Options.Reach). The gate prepares beside its own test runs, which
// decide the tests Finish prefers as killers. Finish or Close it.
type Prepared struct {
	s     *Session
	jobs  []Job
	langs []string // jobs[i]'s language
	start time.Time
}

// Prepare does Run's work up to the first run of a test: each engine's
// Prepare, in Options.Engines' order.
func Prepare(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change, opts Options, p verify.Progress) (*Prepared, error) {
	start := time.Now()
	if p == nil {
		p = verify.NoProgress{}
	}
	if change == nil {
		return nil, errors.New("mutate: no change given")
	}
	if r == nil {
		return nil, errors.New("mutate: no runner given")
	}
	if len(opts.Engines) == 0 {
		return nil, ErrNoEngines
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("mutate: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("mutate: head snapshot %q is not a directory", dir)
	}
	s := &Session{
		Ctx:      ctx,
		Runner:   r,
		Root:     abs,
		Change:   change,
		Options:  opts.WithDefaults(),
		Progress: p,
		Report: &Report{Sources: map[string]string{}, TestFiles: map[string]string{}, Languages: map[string]string{},
			Stats: Stats{Verdicts: map[Verdict]int{}}},
	}
	if s.Options.TempDir != "" {
		s.TempDir, err = os.MkdirTemp(s.Options.TempDir, "bcode-mutate-")
	} else {
		s.TempDir, err = scratch.MkdirTemp("bcode-mutate-")
	}
	if err != nil {
		return nil, fmt.Errorf("mutate: %w", err)
	}
	pr := &Prepared{s: s, start: start}
	for _, e := range s.Options.Engines {
		job, err := e.Prepare(s)
		if err != nil {
			pr.Close()
			return nil, err
		}
		pr.jobs = append(pr.jobs, job)
		pr.langs = append(pr.langs, e.Language())
	}
	return pr, nil
}

// Finish runs each engine's baselines and mutants, preferring tests as
// killers as Options.Tests does, and returns the report. The Prepared is
// closed after it.
func (pr *Prepared) Finish(tests []verify.Test) (*Report, error) {
	s := pr.s
	defer pr.Close()
	s.Options.Tests = tests
	for i, job := range pr.jobs {
		before := len(s.Report.Mutants)
		if err := job.Finish(); err != nil {
			return nil, err
		}
		for _, m := range s.Report.Mutants[before:] {
			s.Report.Languages[m.File] = pr.langs[i]
		}
	}
	s.finish(time.Since(pr.start))
	return s.Report, nil
}

// Close removes what Prepare built. Finish calls it.
func (pr *Prepared) Close() {
	if pr.s.TempDir != "" {
		os.RemoveAll(pr.s.TempDir)
		pr.s.TempDir = ""
	}
}

// WithDefaults is o with the defaults Run gives a session's options.
func (o Options) WithDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = config.DefaultCompileTimeout
	}
	if o.CacheDir == "" {
		o.CacheDir = defaultCacheDir()
	}
	return o
}

func defaultCacheDir() string {
	if d, err := sandbox.CacheDir(""); err == nil {
		return d
	}
	return filepath.Join(os.TempDir(), "bcode-cache")
}

// finish sorts the report and fills in the statistics.
func (s *Session) finish(wall time.Duration) {
	rep := s.Report
	less := func(a, b Mutant) bool {
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		if a.Operator != b.Operator {
			return a.Operator < b.Operator
		}
		return a.Mutated < b.Mutated
	}
	sort.Slice(rep.Mutants, func(i, j int) bool { return less(rep.Mutants[i], rep.Mutants[j]) })
	sort.Slice(rep.Pruned, func(i, j int) bool { return less(rep.Pruned[i], rep.Pruned[j]) })
	sort.Strings(rep.Quarantined)
	counted := 0
	for _, m := range rep.Mutants {
		rep.Stats.Verdicts[m.Verdict]++
		if m.Verdict != Ignored {
			counted++
		}
		if m.Schema {
			rep.Stats.SchemaMutants++
		} else if m.Verdict != Ignored && m.Verdict != NotCovered {
			rep.Stats.OverlayMutants++
		}
	}
	rep.Stats.Pruned = len(rep.Pruned)
	rep.Stats.Wall = wall
	if wall > 0 {
		rep.Stats.MutantsPerMinute = float64(counted) / wall.Minutes()
	}
}
