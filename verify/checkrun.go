package verify

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcode-dev/bcode/config"

	"github.com/bcode-dev/bcode/sandbox"
)

// Check runs the gate on change with cfg (read from the base by the caller).
// The error is for failures that leave no report at all (cancellation);
// everything else, including a missing toolchain, is a Report with verdict
// Error and its reasons.
//
// The steps are the ones README.md and docs/architecture.md name, in order;
// each is a method of checkRun, and a step that ends the run early leaves
// the report (and Check's error) in the run.
func (g *Gate) Check(ctx context.Context, change *Change, cfg config.Config) (*Report, error) {
	r := g.newCheckRun(ctx, change, cfg)
	defer r.finish()
	if r.nothingToCheck() || r.cannotJudge() {
		return r.rep, nil
	}
	// Beside the runs: the static tamper rules and which tests the diff
	// changed.
	r.startStatic()
	// Candidates: snapshots of both sides, and the units of the change's
	// tests and test support.
	if !r.snapshots() || !r.candidates() || !r.overlays() {
		return r.rep, r.err
	}
	// Runs: one per snapshot, sides in parallel.
	if !r.runs() {
		return r.rep, r.err
	}
	// Fail to pass: the candidates' outcomes, repeated where they earn
	// credit, judged.
	if !r.failToPass() {
		return r.rep, r.err
	}
	r.credit()
	r.creditOracle()
	// Pass to pass and tampering, from the full runs of both sides.
	r.passToPass()
	r.tampering()
	// Changed expectations: old tests on new code.
	r.changedExpectations()
	if !r.suites() {
		return r.rep, r.err
	}
	// Evidence: mutants of the changed code against the credited tests.
	if !r.evidence() {
		return r.rep, r.err
	}
	// The verdict, most serious first, held to the level the base asks.
	r.verdict()
	r.level()
	return r.rep, nil
}

// checkRun is one run of the gate on one change: its inputs, the report it
// fills, and what each step leaves for the next.
type checkRun struct {
	g      *Gate
	ctx    context.Context
	change *Change
	cfg    config.Config
	p      Progress
	rep    *Report
	start  time.Time
	err    error // Check's error when a step ends the run early

	timingsMu sync.Mutex
	load      sandbox.Load // the machine's load when the runs started

	// The static step, running beside the snapshots and runs.
	static     chan staticResult // nil until it starts
	staticDone bool
	hints      staticResult

	// Snapshots (empty: not made) and what laying them out waits for.
	baseDir, headDir, beforeDir, oldDir, supportDir string
	preparing                                       sync.WaitGroup
	beforeIsHead, oldIsBase                         bool
	spliced                                         int // code files whose tests the mixed snapshots take from the other side
	supportOnly                                     []FileChange
	oldTargets                                      map[string][]string // the units old runs
	addedInfra                                      []string            // test files and support the change added, left out of old

	// Candidates: test support paths and candidate units by language.
	support map[string]bool
	units   map[string][]string
	nUnits  int
	inUnits map[string]bool // by unitKey

	// The runs.
	fullTargets                   map[string][]string // nil: everything
	base, head, before, old, supp *sideRun
	keep                          map[string][]string
	dropAtEnd                     bool            // the kept binaries go when the run ends
	retried                       map[string]bool // the sides retryTimeouts ran again

	// The key of the base's results (basekey.go), made beside the head's
	// snapshot; baseKeyDone is nil when the base is not keyed.
	baseKeyDone chan struct{}
	baseKey     string
	baseKeyErr  error

	// The before snapshot's stored run (beforereuse.go): what it laid
	// over the base, its key ("" when not keyed), the repeat rounds
	// stored with it by test ID, the note runSides adds, and the head's
	// repeat rounds started early.
	overBase      []FileChange
	beforeKeyHex  string
	storedRepeats map[string][]TestResult
	beforeNote    string
	headRepeats   *headRepeats

	// Mutation evidence started beside the runs (EvidenceStart).
	evArmed      bool
	evOnce       sync.Once
	evFinished   atomic.Int32
	evStartAfter int32
	evFinish     func([]Test) (*MutationSummary, error)

	// Fail to pass.
	cands              []Test
	baseRuns, headRuns map[string][]TestResult

	// What the verdict weighs.
	headFails     bool
	envErrs       []string
	credited      map[string]bool
	creditedTests []Test
	headBroken    []string
	cannotRun     []string
	blocking      int
}

// staticResult is what the static step found: tamper findings, and the
// tests whose source the diff adds or modifies, with their files (Go
// reports no file per test; the diff knows it).
type staticResult struct {
	tamper   []Finding
	hinted   map[string]bool
	hintFile map[string]string
	err      error
}

func (g *Gate) newCheckRun(ctx context.Context, change *Change, cfg config.Config) *checkRun {
	return &checkRun{
		g: g, ctx: ctx, change: change, cfg: cfg, p: g.progress(), start: time.Now(),
		rep: &Report{
			Base:    change.Base,
			Head:    change.Head,
			Files:   len(change.Files),
			Tests:   []TestReport{},
			Tamper:  []Finding{},
			Runner:  g.Runner.Name(),
			Timings: map[string]int64{},

			Level:         LevelNone,
			LevelRequired: requiredLevel(cfg),
			Oracle:        g.oracleIDs(),
		},
	}
}

// finish releases what the run holds, last step first: evidence not taken
// is abandoned, kept test binaries removed, preparers and the static step
// waited for (an early return: its report says why already). The
// duration is the run's whole, cleanup included.
func (r *checkRun) finish() {
	if r.evFinish != nil {
		_, _ = r.evFinish(nil)
	}
	if r.dropAtEnd {
		r.g.dropBinaries(r.beforeDir, r.headDir)
	}
	r.preparing.Wait()
	if r.baseKeyDone != nil {
		<-r.baseKeyDone
	}
	if r.headRepeats != nil {
		<-r.headRepeats.done
	}
	if r.static != nil && !r.staticDone {
		<-r.static
	}
	r.rep.DurationMS = ms(time.Since(r.start))
}

// timing adds the time since t0 to the report's timing name; steps that
// run side by side add to it at once.
func (r *checkRun) timing(name string, t0 time.Time) {
	r.timingsMu.Lock()
	r.rep.Timings[name] += ms(time.Since(t0))
	r.timingsMu.Unlock()
}

// fail ends the run with err as the report's reason; Check's error is the
// context's, if it is done.
func (r *checkRun) fail(err error) bool {
	r.g.errorReport(r.rep, err)
	r.err = ctxErr(r.ctx)
	return false
}

// cancelled ends the run when the context is done.
func (r *checkRun) cancelled() bool {
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return true
	}
	return false
}

// nothingToCheck fills the report of a gate without languages or a change
// without files.
func (r *checkRun) nothingToCheck() bool {
	if len(r.g.Adapters) == 0 {
		r.g.errorReport(r.rep, ErrNoAdapters)
		return true
	}
	if len(r.change.Files) == 0 {
		// Green promises that the suites pass; with nothing changed none
		// ran, so the gate says it could not decide, and why.
		r.rep.Verdict = Error
		r.rep.Reasons = []Reason{{ReasonNoChange, reasonText[ReasonNoChange]}}
		r.rep.Suite.Targeted = SuiteResult{Outcome: NotRun}
		r.rep.Suite.Full = SuiteResult{Outcome: NotRun}
		return true
	}
	return false
}

// cannotJudge names the changed files in languages no adapter knows, and
// ends a change that has nothing else: none of its tests can run, so the
// verdict is error (unsupported), unless the static rules find tampering.
// Beside Go or Python code they are only named (Report.Unsupported).
func (r *checkRun) cannotJudge() bool {
	r.rep.Unsupported = r.g.unsupported(r.change)
	if len(r.rep.Unsupported) == 0 || r.g.judgesAny(r.change) {
		return false
	}
	r.startStatic()
	err := r.waitStatic()
	r.rep.Suite.Targeted = SuiteResult{Outcome: NotRun}
	r.rep.Suite.Full = SuiteResult{Outcome: NotRun}
	r.g.setInfrastructureAside(r.rep, r.cfg)
	switch {
	case err != nil:
		r.g.errorReport(r.rep, err)
	case len(r.rep.Tamper) > 0:
		sortFindings(r.rep.Tamper)
		decideTampered(r.rep)
	default:
		r.rep.Verdict = Error
		addReason(r.rep, ReasonUnsupported, r.g.unsupportedMessage(r.rep.Unsupported))
	}
	return true
}

// startStatic starts, beside the runs (they need no snapshot and start
// interpreters of their own), the tamper rules of every adapter and the
// change-wide ones, and the static hint: the tests whose source the diff
// adds or modifies.
func (r *checkRun) startStatic() {
	r.p.Step("checking the diff for tampering")
	r.static = make(chan staticResult, 1)
	go func() {
		res := staticResult{hinted: map[string]bool{}, hintFile: map[string]string{}}
		res.err = r.staticChecks(&res)
		r.static <- res
	}()
}

func (r *checkRun) staticChecks(res *staticResult) error {
	defer r.timing("static", time.Now())
	for _, a := range r.g.adaptersFor(r.change) {
		fs, err := a.Tamper(r.ctx, r.change)
		if err != nil {
			return fmt.Errorf("%s tamper check: %w", a.Language(), err)
		}
		res.tamper = append(res.tamper, fs...)
	}
	for _, c := range r.g.Checks {
		fs, err := c(r.ctx, r.change, r.cfg)
		if err != nil {
			return err
		}
		res.tamper = append(res.tamper, fs...)
	}
	for _, a := range r.g.adaptersFor(r.change) {
		ts, err := a.ChangedTests(r.ctx, r.change)
		if err != nil {
			return fmt.Errorf("finding changed %s tests: %w", a.Language(), err)
		}
		for _, t := range ts {
			res.hinted[t.ID()] = true
			res.hintFile[t.ID()] = t.File
		}
	}
	return nil
}

// waitStatic waits for the static step and adds its findings to the
// report. Every return of Check waits for it: the change's interpreters
// are not left running.
func (r *checkRun) waitStatic() error {
	if r.staticDone {
		return nil
	}
	r.staticDone = true
	r.hints = <-r.static
	r.rep.Tamper = append(r.rep.Tamper, r.hints.tamper...)
	return r.hints.err
}

// snapshots lays out the base and the head, side by side (independent
// exports: git, tar), and starts the adapters that prepare the head.
func (r *checkRun) snapshots() bool {
	t0 := time.Now()
	r.p.Step("laying out snapshots of base and head")
	var baseErr, headErr error
	parallel(2,
		func() { r.baseDir, baseErr = r.change.Workspace.Materialize(r.ctx, BaseSide, nil) },
		func() { r.headDir, headErr = r.change.Workspace.Materialize(r.ctx, HeadSide, nil) },
	)
	if baseErr != nil {
		return r.fail(fmt.Errorf("snapshot of the base: %w", baseErr))
	}
	if headErr != nil {
		return r.fail(fmt.Errorf("snapshot of the head: %w", headErr))
	}
	r.startBaseKey()
	for _, a := range r.g.adaptersFor(r.change) {
		if pr, ok := a.(Preparer); ok {
			r.preparing.Add(1)
			go func() {
				defer r.preparing.Done()
				defer r.timing("prepare_"+a.Language(), time.Now())
				pr.Prepare(r.ctx, r.g.Runner, r.headDir)
			}()
		}
	}
	r.timing("snapshot", t0)
	return true
}

// candidates asks each adapter for the units of the change's tests and
// the test support they use.
func (r *checkRun) candidates() bool {
	t0 := time.Now()
	r.support = map[string]bool{}
	r.units = map[string][]string{}
	for _, a := range r.g.adaptersFor(r.change) {
		c, err := a.Candidates(r.ctx, r.g.Runner, r.headDir, r.change)
		if err != nil {
			return r.fail(fmt.Errorf("finding the %s tests the change touches: %w", a.Language(), err))
		}
		for _, f := range c.Support {
			r.support[f] = true
		}
		if len(c.Units) > 0 {
			r.units[a.Language()] = c.Units
			r.nUnits += len(c.Units)
		}
	}
	r.addOracleUnits()
	r.timing("candidates", t0)
	return true
}

// overlays lays out the snapshots that mix the sides' tests: the base with
// the head's tests and test support (before), the head with the base's
// (old), and the head with the base's test support alone (support).
func (r *checkRun) overlays() bool {
	t0 := time.Now()
	overBase, overHead, supportOnly := r.overlayFiles()
	r.overBase, r.supportOnly = overBase, supportOnly
	r.oldTargets = r.oldUnits(overHead)
	r.addedInfra = addedFiles(overHead)
	// A snapshot the same in content as another gives the same results:
	// when the change touches tests and their support only, the base with
	// the head's tests is the head, and when it adds no file either, the
	// head with the base's tests is the base. Their targeted runs are then
	// the units' part of the full runs, which run anyway.
	r.beforeIsHead = r.nUnits > 0 && r.spliced == 0 && len(overBase) == len(r.change.Files) && !slices.ContainsFunc(r.change.Files, isSubmodule)
	r.oldIsBase = r.beforeIsHead && len(overHead) == len(r.change.Files)
	if r.nUnits > 0 {
		var beforeErr, oldErr, supportErr error
		parallel(3,
			func() {
				if !r.beforeIsHead {
					r.beforeDir, beforeErr = r.change.Workspace.Materialize(r.ctx, BaseSide, overBase)
				}
			},
			func() {
				if len(overHead) > 0 && !r.oldIsBase {
					r.oldDir, oldErr = r.change.Workspace.Materialize(r.ctx, HeadSide, overHead)
				}
			},
			func() {
				if len(supportOnly) > 0 && len(supportOnly) < len(overHead) {
					r.supportDir, supportErr = r.change.Workspace.Materialize(r.ctx, HeadSide, supportOnly)
				}
			},
		)
		switch {
		case beforeErr != nil:
			return r.fail(fmt.Errorf("snapshot of the base with the head's tests: %w", beforeErr))
		case oldErr != nil:
			return r.fail(fmt.Errorf("snapshot of the head with the base's tests: %w", oldErr))
		case supportErr != nil:
			return r.fail(fmt.Errorf("snapshot of the head with the base's test support: %w", supportErr))
		}
	}
	r.timing("snapshot", t0)
	return true
}

// overlayFiles are the files each mixed snapshot lays over its side: the
// head's tests and test support over the base; over the head, the base's
// test infrastructure exactly (changed files at their base version, files
// the change added left out); and the base's test support alone (helpers,
// plugins, data: not test files, none left out) over the head, the head's
// tests kept: a test that passes on the head only with the head's support
// has had what it checks changed under it (a lax helper, new golden data).
// When every modified file is support and none was added, the old
// snapshot is that already.
//
// Test infrastructure is what the production code does not import: for
// Go every _test.go file, with its init functions, package variables and
// TestMain. A test file the change adds runs its init before the base's
// tests in the same test binary, and can swap a package variable the code
// under test calls for a correct copy: the base's tests would then pass on
// the head only because of the head's test files. Left out of old, they
// cannot (changedExpectations, addedInfra).
func (r *checkRun) overlayFiles() (overBase, overHead, supportOnly []FileChange) {
	for _, f := range r.change.Files {
		if !r.support[f.Path] && !r.g.isTestSupport(f.Path) {
			if b, h, ok := r.g.spliced(f); ok {
				overBase, overHead = append(overBase, b), append(overHead, h)
				r.spliced++
			}
			continue
		}
		overBase = append(overBase, f)
		if f.Base == nil && f.BaseMode == "" {
			if f.Head != nil && !isSubmodule(f) {
				// Added: left out of the head with the base's tests.
				overHead = append(overHead, FileChange{Path: f.Path, Status: f.Status})
			}
			continue
		}
		overHead = append(overHead, FileChange{Path: f.Path, Status: f.Status, Head: f.Base, HeadMode: f.BaseMode})
		if !r.g.isTestFile(f.Path) || r.g.helpersOnly(f) {
			supportOnly = append(supportOnly, overHead[len(overHead)-1])
		}
	}
	return overBase, overHead, supportOnly
}

// spliced are the two mixed versions of f, a code file that holds tests
// (verify.TestSplicer): the base's code with the head's tests, and the
// head's code with the base's tests. False when no adapter splices it or
// its tests did not change.
func (g *Gate) spliced(f FileChange) (overBase, overHead FileChange, ok bool) {
	if f.Base == nil || f.Head == nil || f.Binary {
		return FileChange{}, FileChange{}, false
	}
	for _, a := range g.Adapters {
		s, is := a.(TestSplicer)
		if !is || !a.Owns(f.Path) {
			continue
		}
		before, ok1 := s.SpliceTests(f.Path, f.Base, f.Head)
		old, ok2 := s.SpliceTests(f.Path, f.Head, f.Base)
		if !ok1 || !ok2 || bytes.Equal(before, f.Base) && bytes.Equal(old, f.Head) {
			return FileChange{}, FileChange{}, false
		}
		return FileChange{Path: f.Path, Status: f.Status, Head: before, HeadMode: f.BaseMode},
			FileChange{Path: f.Path, Status: f.Status, Head: old, HeadMode: f.HeadMode}, true
	}
	return FileChange{}, FileChange{}, false
}

// oldUnits are the candidate units the head with the base's tests runs:
// a unit that is itself a file the change added (a Python test file) is
// not in that snapshot, and has no base test to run.
func (r *checkRun) oldUnits(overHead []FileChange) map[string][]string {
	gone := map[string]bool{}
	for _, f := range overHead {
		if f.Head == nil && f.HeadMode == "" {
			gone[f.Path] = true
		}
	}
	out := map[string][]string{}
	for lang, us := range r.units {
		for _, u := range us {
			if !gone[strings.TrimPrefix(u, "./")] {
				out[lang] = append(out[lang], u)
			}
		}
	}
	return out
}

// runs runs each snapshot once, sides in parallel: the base and the head
// whole (or what the change reaches, with skip_full_suite), the mixed
// snapshots the candidate units only.
func (r *checkRun) runs() bool {
	t0 := time.Now()
	if r.cfg.Gate.SkipFullSuite && !r.fullSuiteTargets() {
		return false
	}
	r.p.Step("running the tests on the base and the head (%d candidate units)", r.nUnits)
	// The two snapshots the fail-to-pass repeats run in keep the test
	// binaries of the candidate units, so a repeat starts the binary
	// that ran instead of linking another.
	if r.cfg.Gate.FlakeRuns > 1 && !r.beforeIsHead {
		r.keep = r.units
		r.dropAtEnd = true
	}
	r.armEvidence()
	r.runSides()
	if r.cancelled() {
		return false
	}
	r.keepBase()
	r.timing("runs", t0)
	return true
}

// fullSuiteTargets narrows the full runs to the units the change reaches
// and the candidate units.
func (r *checkRun) fullSuiteTargets() bool {
	r.fullTargets = map[string][]string{}
	for _, a := range r.g.adaptersFor(r.change) {
		ts, err := a.Targets(r.ctx, r.g.Runner, r.headDir, r.change)
		if err != nil {
			return r.fail(fmt.Errorf("%s: finding what the change reaches: %w", a.Language(), err))
		}
		r.fullTargets[a.Language()] = mergeUnits(ts, r.units[a.Language()])
	}
	return true
}

// armEvidence readies mutation evidence to start beside the runs. It
// depends on the head snapshot and the change, not on what the runs find:
// its listing and builds start as soon as a run slot is left idle (the
// last wave of runs has fewer runs than slots), and finish after the
// judging, when the credited tests are known, or are abandoned (finish).
func (r *checkRun) armEvidence() {
	if r.g.EvidenceStart == nil || r.nUnits == 0 {
		return
	}
	// Five run functions (the ones without a snapshot return at once):
	// when all but sides()-1 have returned, a slot is idle.
	const runFns = 5
	r.evArmed = true
	r.evStartAfter = int32(max(runFns-sides()+1, 0))
	if r.evStartAfter == 0 {
		r.startEvidence()
	}
}

func (r *checkRun) startEvidence() {
	r.evOnce.Do(func() { r.evFinish = r.g.EvidenceStart(r.ctx, r.g.Runner, r.headDir, r.change) })
}

// timed is fn timed as name; with evidence armed, fn's return may leave
// the slot evidence starts in.
func (r *checkRun) timed(name string, fn func()) func() {
	if !r.evArmed {
		return func() { defer r.timing(name, time.Now()); fn() }
	}
	return func() {
		defer func() {
			if r.evFinished.Add(1) >= r.evStartAfter {
				r.startEvidence()
			}
		}()
		defer r.timing(name, time.Now())
		fn()
	}
}

// runSides runs the snapshots, retries the runs that timed out, and
// stands in for those not made by the units' part of the run of a
// snapshot the same in content.
func (r *checkRun) runSides() {
	r.load = sandbox.ReadLoad()
	specs := r.sideSpecs()
	// The before snapshot's stored run is looked up beside the runs, not
	// in a run slot: the head and the head with the base's tests run
	// first, and with a stored run the head's repeats start as soon as
	// it is read (startHeadRepeats).
	var beforeLookup chan bool
	if r.beforeKeyable() == nil {
		beforeLookup = make(chan bool, 1)
		go func() { beforeLookup <- r.reuseBefore() }()
		specs = runFirst(specs, "head", "old")
	}
	fns := make([]func(), len(specs))
	for i, sp := range specs {
		fns[i] = r.timed("run_"+sp.name, func() {
			if sp.dir != "" {
				*sp.run = r.g.runSide(r.ctx, sp.dir, sp.targets, sp.keep, r.load.Deadline(sp.floor, 0))
			}
		})
		if sp.name == "before" && beforeLookup != nil {
			run := fns[i]
			fns[i] = func() {
				if <-beforeLookup {
					specs[i].dir = ""
					sp.dir = ""
				}
				run()
			}
		}
		if sp.name == "base" && r.baseKeyDone != nil {
			// The base's key is awaited in the base's own slot, not
			// before the runs start: the head and the mixed snapshots
			// run while it is made, and a base whose stored run is
			// read takes its slot for no more than the read.
			run := fns[i]
			fns[i] = func() {
				if r.reuseBase() {
					specs[i].dir = ""
					sp.dir = ""
				}
				run()
			}
		}
	}
	parallel(sides(), fns...)
	if r.beforeNote != "" {
		r.rep.Notes = append(r.rep.Notes, r.beforeNote)
	}
	r.retryTimeouts(specs)
	if r.beforeIsHead {
		r.before = r.head.unitsOf(r.units)
	}
	if r.oldIsBase {
		r.old = r.base.unitsOf(r.oldTargets)
	}
	if r.supportDir == "" && len(r.supportOnly) > 0 {
		r.supp = r.old
	}
	if r.before == nil {
		r.before = newSideRun("")
	}
}

// runFirst is specs with the ones named first, in that order, the others
// after them in theirs.
func runFirst(specs []sideSpec, names ...string) []sideSpec {
	out := make([]sideSpec, 0, len(specs))
	for _, n := range names {
		for _, sp := range specs {
			if sp.name == n {
				out = append(out, sp)
			}
		}
	}
	for _, sp := range specs {
		if !slices.Contains(names, sp.name) {
			out = append(out, sp)
		}
	}
	return out
}

// addedFiles are the paths an overlay leaves out (files the change added).
func addedFiles(overlay []FileChange) []string {
	var out []string
	for _, f := range overlay {
		if f.Head == nil && f.HeadMode == "" {
			out = append(out, f.Path)
		}
	}
	return out
}
