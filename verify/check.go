package verify

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcode-dev/bcode/config"
)

// The gate defines credit by what runs, the way the SWE-bench harness
// defines FAIL_TO_PASS and PASS_TO_PASS, at the granularity of test IDs (Go
// tests and subtests from `go test -json` events, pytest node IDs with their
// parameters, unittest methods). Four snapshots, each run once:
//
//	base   the untouched base, full suite: what passed before (pass-to-pass
//	       baseline, and the control for fail-to-pass candidates)
//	head   the head, full suite: what passes after
//	before the base with the head's tests and test support laid over it,
//	       candidate units only: what the head's tests say about the old code
//	old    the head with the base's tests and test support laid over it,
//	       candidate units only: what the old tests say about the new code
//
// base and head are what a person runs to compare two commits; before and
// old run only the packages or files the change's tests live in. Repeats
// happen only for fail-to-pass candidates, each round in its own process.

// sideRun is one snapshot's run, merged over the adapters.
type sideRun struct {
	dir      string
	results  map[string]TestResult // by Test.ID()
	order    []string              // IDs in the order they reported
	units    map[string]UnitResult // by unitKey
	env      []string              // environment errors (toolchain missing, runner failed)
	refused  []Finding             // what the confined reader refused of the run's reports
	duration time.Duration
	ran      bool
}

// refusals is what the confined reader refused of the side's reports (nil
// side: none).
func (s *sideRun) refusals() []Finding {
	if s == nil {
		return nil
	}
	return s.refused
}

func unitKey(lang, unit string) string { return lang + ":" + unit }

func newSideRun(dir string) *sideRun {
	return &sideRun{dir: dir, results: map[string]TestResult{}, units: map[string]UnitResult{}}
}

func (s *sideRun) add(lang string, res SuiteResult) {
	s.ran = true
	for _, r := range res.Results {
		if r.Test.Language == "" {
			r.Test.Language = lang
		}
		id := r.Test.ID()
		if _, ok := s.results[id]; !ok {
			s.order = append(s.order, id)
		}
		s.results[id] = r
	}
	for _, u := range res.Units {
		s.units[unitKey(lang, u.Unit)] = u
	}
	s.duration += res.Duration
	if res.Outcome == EnvError {
		s.env = append(s.env, res.Detail)
	}
}

// unitOf is a test's unit outcome on a side; ok is false when the side never
// reached the unit.
func (s *sideRun) unitOf(t Test) (UnitResult, bool) {
	if u, ok := s.units[unitKey(t.Language, t.Package)]; ok {
		return u, true
	}
	// "*": the language's run failed before any unit ran.
	u, ok := s.units[unitKey(t.Language, "*")]
	return u, ok
}

// outcome is a test's result on a side: its own event, else what kept its
// unit from running, else NotRun.
func (s *sideRun) outcome(t Test) TestResult {
	if r, ok := s.results[t.ID()]; ok {
		return r
	}
	if u, ok := s.unitOf(t); ok && u.Outcome != Pass {
		return TestResult{Test: t, Outcome: u.Outcome, Detail: u.Detail}
	}
	if parent, ok := goParent(t); ok {
		// A Go subtest whose parent failed or skipped before reaching it.
		if p, ok := s.results[parent.ID()]; ok && (p.Outcome == Fail || p.Outcome == Skip || p.Outcome == Timeout) {
			return TestResult{Test: t, Outcome: p.Outcome, Detail: parent.Name + " ended before this subtest ran:\n" + p.Detail}
		}
	}
	return TestResult{Test: t, Outcome: NotRun, Detail: "no result for this test on this side"}
}

func goParent(t Test) (Test, bool) {
	if t.Language != "go" {
		return Test{}, false
	}
	i := strings.LastIndex(t.Name, "/")
	if i < 0 {
		return Test{}, false
	}
	p := t
	p.Name = t.Name[:i]
	return p, true
}

// runSide runs targets (language → units; nil runs every adapter's full
// suite) in dir. keep (language → units) names the units whose test
// binaries an adapter that can should keep for the repeats.
func (g *Gate) runSide(ctx context.Context, dir string, targets, keep map[string][]string, timeout time.Duration) *sideRun {
	s := newSideRun(dir)
	for _, a := range g.Adapters {
		var units []string
		if targets != nil {
			units = targets[a.Language()]
			if len(units) == 0 {
				continue
			}
		}
		var res SuiteResult
		var err error
		if k, ok := a.(BinaryKeeper); ok && len(keep[a.Language()]) > 0 {
			res, err = k.RunSuiteKeeping(ctx, g.Runner, dir, units, keep[a.Language()], timeout)
		} else {
			res, err = a.RunSuite(ctx, g.Runner, dir, units, timeout)
		}
		if f, ok := refusedFinding(err); ok {
			s.refused = append(s.refused, f)
		}
		if err != nil {
			res = SuiteResult{Outcome: EnvError, Detail: fmt.Sprintf("%s suite: %v", a.Language(), err)}
		}
		s.add(a.Language(), res)
	}
	return s
}

// unitsOf is the part of s a run of units alone gives: their tests and
// unit outcomes, and the "*" outcome of a language whose run failed before
// any unit ran.
func (s *sideRun) unitsOf(units map[string][]string) *sideRun {
	in := map[string]bool{}
	for lang, us := range units {
		for _, u := range us {
			in[unitKey(lang, u)] = true
		}
	}
	out := newSideRun(s.dir)
	out.ran, out.duration = s.ran, s.duration
	for _, id := range s.order {
		if r := s.results[id]; in[unitKey(r.Test.Language, r.Test.Package)] {
			out.order = append(out.order, id)
			out.results[id] = r
		}
	}
	for k, u := range s.units {
		if in[k] || u.Unit == "*" {
			out.units[k] = u
		}
	}
	return out
}

// isSubmodule reports whether f is a submodule on either side: a snapshot
// lays one over as an empty directory, so no overlay of it is its tree.
func isSubmodule(f FileChange) bool { return f.BaseMode == "160000" || f.HeadMode == "160000" }

// dropBinaries has every BinaryKeeper remove what it kept in dirs.
func (g *Gate) dropBinaries(dirs ...string) {
	for _, a := range g.Adapters {
		if k, ok := a.(BinaryKeeper); ok {
			for _, d := range dirs {
				if d != "" {
					k.DropBinaries(d)
				}
			}
		}
	}
}

// parallel runs fns with at most n at once and waits for all.
func parallel(n int, fns ...func()) {
	sem := make(chan struct{}, max(n, 1))
	var wg sync.WaitGroup
	for _, fn := range fns {
		if fn == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn()
		}()
	}
	wg.Wait()
}

// sides is how many snapshot runs go at once: two (base and head) on a
// small machine, up to four where cores allow.
func sides() int { return min(max(runtime.NumCPU()/2, 2), 4) }

// Check runs the gate on change with cfg (read from the base by the caller).
// The error is for failures that leave no report at all (cancellation);
// everything else, including a missing toolchain, is a Report with verdict
// Error and its reasons.
func (g *Gate) Check(ctx context.Context, change *Change, cfg config.Config) (*Report, error) {
	start := time.Now()
	p := g.progress()
	rep := &Report{
		Base:    change.Base,
		Head:    change.Head,
		Files:   len(change.Files),
		Tests:   []TestReport{},
		Tamper:  []Finding{},
		Runner:  g.Runner.Name(),
		Timings: map[string]int64{},
	}
	defer func() { rep.DurationMS = ms(time.Since(start)) }()
	if len(g.Adapters) == 0 {
		return g.errorReport(rep, ErrNoAdapters), nil
	}
	var timingsMu sync.Mutex
	timing := func(name string, t0 time.Time) {
		timingsMu.Lock()
		rep.Timings[name] += ms(time.Since(t0))
		timingsMu.Unlock()
	}
	phase := timing

	if len(change.Files) == 0 {
		// Green promises that the suites pass; with nothing changed none
		// ran, so the gate says it could not decide, and why.
		rep.Verdict = Error
		rep.Reasons = []Reason{{ReasonNoChange, reasonText[ReasonNoChange]}}
		rep.Suite.Targeted = SuiteResult{Outcome: NotRun}
		rep.Suite.Full = SuiteResult{Outcome: NotRun}
		return rep, nil
	}

	// 1 and 2, beside the runs (they need no snapshot and start
	// interpreters of their own): the tamper rules of every adapter and
	// the change-wide ones, and the static hint, the tests whose source
	// the diff adds or modifies.
	p.Step("checking the diff for tampering")
	static := make(chan error, 1)
	var staticTamper []Finding
	hinted := map[string]bool{}
	hintFile := map[string]string{} // Go reports no file per test; the diff knows it
	go func() {
		static <- func() error {
			defer timing("static", time.Now())
			for _, a := range g.adaptersFor(change) {
				fs, err := a.Tamper(ctx, change)
				if err != nil {
					return fmt.Errorf("%s tamper check: %w", a.Language(), err)
				}
				staticTamper = append(staticTamper, fs...)
			}
			for _, c := range g.Checks {
				fs, err := c(ctx, change, cfg)
				if err != nil {
					return err
				}
				staticTamper = append(staticTamper, fs...)
			}
			for _, a := range g.adaptersFor(change) {
				ts, err := a.ChangedTests(ctx, change)
				if err != nil {
					return fmt.Errorf("finding changed %s tests: %w", a.Language(), err)
				}
				for _, t := range ts {
					hinted[t.ID()] = true
					hintFile[t.ID()] = t.File
				}
			}
			return nil
		}()
	}()
	// Every return below waits for it: its maps are not to be read (nor
	// the change's interpreters left running) while it works.
	staticDone := false
	waitStatic := func() error {
		if staticDone {
			return nil
		}
		staticDone = true
		err := <-static
		rep.Tamper = append(rep.Tamper, staticTamper...)
		return err
	}
	defer func() {
		if !staticDone {
			<-static // an early return: its report says why already
		}
	}()

	t0 := time.Now()
	// 3. Snapshots of both sides, and what the change's tests are.
	p.Step("laying out snapshots of base and head")
	// The snapshots are independent exports (git, tar): they are made side
	// by side.
	var baseDir, headDir string
	var baseErr, headErr error
	parallel(2,
		func() { baseDir, baseErr = change.Workspace.Materialize(ctx, BaseSide, nil) },
		func() { headDir, headErr = change.Workspace.Materialize(ctx, HeadSide, nil) },
	)
	if baseErr != nil {
		return g.errorReport(rep, fmt.Errorf("snapshot of the base: %w", baseErr)), ctxErr(ctx)
	}
	if headErr != nil {
		return g.errorReport(rep, fmt.Errorf("snapshot of the head: %w", headErr)), ctxErr(ctx)
	}
	var preparing sync.WaitGroup
	defer preparing.Wait()
	for _, a := range g.adaptersFor(change) {
		if pr, ok := a.(Preparer); ok {
			preparing.Add(1)
			go func() {
				defer preparing.Done()
				defer timing("prepare_"+a.Language(), time.Now())
				pr.Prepare(ctx, g.Runner, headDir)
			}()
		}
	}
	phase("snapshot", t0)
	t0 = time.Now()
	support := map[string]bool{}
	units := map[string][]string{}
	nUnits := 0
	for _, a := range g.adaptersFor(change) {
		c, err := a.Candidates(ctx, g.Runner, headDir, change)
		if err != nil {
			return g.errorReport(rep, fmt.Errorf("finding the %s tests the change touches: %w", a.Language(), err)), ctxErr(ctx)
		}
		for _, f := range c.Support {
			support[f] = true
		}
		if len(c.Units) > 0 {
			units[a.Language()] = c.Units
			nUnits += len(c.Units)
		}
	}
	phase("candidates", t0)
	t0 = time.Now()
	var overBase, overHead []FileChange
	for _, f := range change.Files {
		if !support[f.Path] && !g.isTestSupport(f.Path) {
			continue
		}
		overBase = append(overBase, f)
		if f.Base != nil || f.BaseMode != "" {
			overHead = append(overHead, FileChange{Path: f.Path, Status: f.Status, Head: f.Base, HeadMode: f.BaseMode})
		}
	}
	// The base's test support alone (helpers, plugins, data: not test
	// files) laid over the head, the head's tests kept: a test that passes
	// on the head only with the head's support has had what it checks
	// changed under it (a lax helper, new golden data). When every
	// modified file is support, the old snapshot is that already.
	var supportOnly []FileChange
	for _, f := range overHead {
		if !g.isTestFile(f.Path) {
			supportOnly = append(supportOnly, f)
		}
	}
	// A snapshot the same in content as another gives the same results:
	// when the change touches tests and their support only, the base with
	// the head's tests is the head, and when it adds no file either, the
	// head with the base's tests is the base. Their targeted runs are then
	// the units' part of the full runs, which run anyway.
	beforeIsHead := nUnits > 0 && len(overBase) == len(change.Files) && !slices.ContainsFunc(change.Files, isSubmodule)
	oldIsBase := beforeIsHead && len(overHead) == len(change.Files)
	var beforeDir, oldDir, supportDir string
	if nUnits > 0 {
		var beforeErr, oldErr, supportErr error
		parallel(3,
			func() {
				if !beforeIsHead {
					beforeDir, beforeErr = change.Workspace.Materialize(ctx, BaseSide, overBase)
				}
			},
			func() {
				if len(overHead) > 0 && !oldIsBase {
					oldDir, oldErr = change.Workspace.Materialize(ctx, HeadSide, overHead)
				}
			},
			func() {
				if len(supportOnly) > 0 && len(supportOnly) < len(overHead) {
					supportDir, supportErr = change.Workspace.Materialize(ctx, HeadSide, supportOnly)
				}
			},
		)
		switch {
		case beforeErr != nil:
			return g.errorReport(rep, fmt.Errorf("snapshot of the base with the head's tests: %w", beforeErr)), ctxErr(ctx)
		case oldErr != nil:
			return g.errorReport(rep, fmt.Errorf("snapshot of the head with the base's tests: %w", oldErr)), ctxErr(ctx)
		case supportErr != nil:
			return g.errorReport(rep, fmt.Errorf("snapshot of the head with the base's test support: %w", supportErr)), ctxErr(ctx)
		}
	}
	phase("snapshot", t0)

	// 4. One run per snapshot, sides in parallel.
	t0 = time.Now()
	var fullTargets map[string][]string // nil: everything
	if cfg.Gate.SkipFullSuite {
		fullTargets = map[string][]string{}
		for _, a := range g.adaptersFor(change) {
			ts, err := a.Targets(ctx, g.Runner, headDir, change)
			if err != nil {
				return g.errorReport(rep, fmt.Errorf("%s: finding what the change reaches: %w", a.Language(), err)), ctxErr(ctx)
			}
			fullTargets[a.Language()] = mergeUnits(ts, units[a.Language()])
		}
	}
	suiteTimeout, testTimeout := cfg.Gate.SuiteTimeout.Duration, cfg.Gate.TestTimeout.Duration
	var base, head, before, old, supp *sideRun
	p.Step("running the tests on the base and the head (%d candidate units)", nUnits)
	timed := func(name string, fn func()) func() {
		return func() { defer timing(name, time.Now()); fn() }
	}
	// The two snapshots the fail-to-pass repeats run in keep the test
	// binaries of the candidate units, so a repeat starts the binary
	// that ran instead of linking another.
	var keep map[string][]string
	if cfg.Gate.FlakeRuns > 1 && !beforeIsHead {
		keep = units
		defer g.dropBinaries(beforeDir, headDir)
	}
	// Mutation evidence depends on the head snapshot and the change, not
	// on what the runs find: its listing and builds start as soon as a
	// run slot is left idle (the last wave of runs has fewer runs than
	// slots), and finish after the judging, when the credited tests are
	// known, or are abandoned.
	var evFinish func([]Test) (*MutationSummary, error)
	if g.EvidenceStart != nil && nUnits > 0 {
		// Five run functions (the ones without a snapshot return at
		// once): when all but sides()-1 have returned, a slot is idle.
		const runFns = 5
		var once sync.Once
		var finished atomic.Int32
		startAfter := int32(max(runFns-sides()+1, 0))
		start := func() {
			once.Do(func() { evFinish = g.EvidenceStart(ctx, g.Runner, headDir, change) })
		}
		if startAfter == 0 {
			start()
		}
		timed = func(name string, fn func()) func() {
			return func() {
				defer func() {
					if finished.Add(1) >= startAfter {
						start()
					}
				}()
				defer timing(name, time.Now())
				fn()
			}
		}
		defer func() {
			// Abandoned unless step 8 took it.
			if evFinish != nil {
				_, _ = evFinish(nil)
			}
		}()
	}
	parallel(sides(),
		timed("run_before", func() {
			if beforeDir != "" {
				before = g.runSide(ctx, beforeDir, units, keep, testTimeout)
			}
		}),
		timed("run_head", func() { head = g.runSide(ctx, headDir, fullTargets, keep, suiteTimeout) }),
		timed("run_base", func() { base = g.runSide(ctx, baseDir, fullTargets, nil, suiteTimeout) }),
		timed("run_old", func() {
			if oldDir != "" {
				old = g.runSide(ctx, oldDir, units, nil, testTimeout)
			}
		}),
		timed("run_support", func() {
			if supportDir != "" {
				supp = g.runSide(ctx, supportDir, units, nil, testTimeout)
			}
		}),
	)
	if beforeIsHead {
		before = head.unitsOf(units)
	}
	if oldIsBase {
		old = base.unitsOf(units)
	}
	if supportDir == "" && len(supportOnly) > 0 {
		supp = old
	}
	if before == nil {
		before = newSideRun("")
	}
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	phase("runs", t0)

	// 5. Fail to pass: every test ID of the candidate units.
	t0 = time.Now()
	inUnits := map[string]bool{}
	for lang, us := range units {
		for _, u := range us {
			inUnits[unitKey(lang, u)] = true
		}
	}
	var cands []Test
	seen := map[string]bool{}
	for _, s := range []*sideRun{before, head} {
		for _, id := range s.order {
			t := s.results[id].Test
			if !seen[id] && inUnits[unitKey(t.Language, t.Package)] {
				seen[id] = true
				cands = append(cands, t)
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].ID() < cands[j].ID() })
	rep.Candidates = len(cands)
	baseRuns := map[string][]TestResult{}
	headRuns := map[string][]TestResult{}
	var f2p []Test
	for _, t := range cands {
		b := g.judgeBase(change, before.outcome(t))
		h := head.outcome(t)
		baseRuns[t.ID()] = []TestResult{b}
		headRuns[t.ID()] = []TestResult{h}
		if b.Outcome == Fail && h.Outcome == Pass {
			f2p = append(f2p, t)
		}
	}
	if rounds := cfg.Gate.FlakeRuns - 1; rounds > 0 && len(f2p) > 0 {
		p.Step("repeating %d fail-to-pass candidates %d more times on each side, each run in its own process", len(f2p), rounds)
		var bres, hres []TestResult
		var errs []error
		var mu sync.Mutex
		repeat := func(name, dir string, into *[]TestResult) func() {
			return func() {
				t0 := time.Now()
				for lang, ts := range groupByLanguage(f2p) {
					res, err := g.adapter(lang).RunTests(ctx, g.Runner, dir, ts, RunOptions{Count: rounds, Timeout: testTimeout, Separate: true})
					mu.Lock()
					*into = append(*into, res...)
					if err != nil {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
				timing(name, t0)
			}
		}
		parallel(sides(), repeat("repeat_before", beforeDir, &bres), repeat("repeat_head", headDir, &hres))
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if len(errs) > 0 {
			return g.errorReport(rep, fmt.Errorf("repeating fail-to-pass candidates: %w", errs[0])), nil
		}
		for _, r := range bres {
			baseRuns[r.Test.ID()] = append(baseRuns[r.Test.ID()], g.judgeBase(change, r))
		}
		collect(headRuns, hres)
	}
	// Mutation evidence copies the head's snapshot: no binary of the
	// runs goes with it.
	g.dropBinaries(beforeDir, headDir)
	phase("repeats", t0)
	if err := waitStatic(); err != nil {
		return g.errorReport(rep, err), ctxErr(ctx)
	}

	headFails := false
	var envErrs []string
	credited := map[string]bool{}
	var creditedTests []Test
	for _, t := range cands {
		var control []TestResult
		if r, ok := base.results[t.ID()]; ok {
			control = []TestResult{r}
		}
		tr := judge(t, baseRuns[t.ID()], headRuns[t.ID()], control)
		tr.Changed = hinted[t.ID()]
		if tr.File == "" {
			tr.File = hintFile[t.ID()]
		}
		tr.Runs = len(headRuns[t.ID()])
		if tr.Credited {
			credited[t.ID()] = true
			creditedTests = append(creditedTests, t)
		}
		switch tr.HeadOutcome {
		case Fail, BuildError, ImportError, MissingSymbol, Timeout:
			// A candidate failing on the head counts against the change
			// unless it failed on the untouched base as well.
			if r, ok := base.results[t.ID()]; !ok || r.Outcome == Pass || r.Outcome == Skip {
				headFails = true
			}
		}
		if tr.BaseOutcome == EnvError || tr.HeadOutcome == EnvError {
			envErrs = append(envErrs, firstNonEmpty(tr.HeadDetail, tr.BaseDetail))
		}
		if tr.Changed || tr.Credited || tr.BaseOutcome != Pass || tr.HeadOutcome != Pass {
			rep.Tests = append(rep.Tests, tr)
		}
	}

	// 6. Pass to pass and tampering, from the full runs of both sides.
	p2p, vanished, headBroken, cannotRun := passToPass(base, head, inUnits)
	rep.PassToPass = p2p
	rep.Tamper = append(rep.Tamper, vanished...)
	for _, s := range []*sideRun{base, head, before} {
		envErrs = append(envErrs, s.env...)
	}
	if old != nil {
		envErrs = append(envErrs, old.env...)
	}
	if supp != nil && supp != old {
		envErrs = append(envErrs, supp.env...)
	}
	for _, s := range []*sideRun{before, head} {
		rep.Tamper = append(rep.Tamper, alteredReports(s)...)
	}
	seenRefusal := map[Finding]bool{}
	for _, s := range []*sideRun{base, head, before, old, supp} {
		for _, f := range s.refusals() {
			if !seenRefusal[f] {
				seenRefusal[f] = true
				rep.Tamper = append(rep.Tamper, f)
			}
		}
	}

	// 7. Old tests on new code.
	blocking := 0
	if old != nil {
		rep.ChangedExpectations = changedExpectations(base, head, old)
	}
	if supp != nil {
		rep.ChangedExpectations = append(rep.ChangedExpectations, g.supportDecides(change, head, supp, rep.ChangedExpectations)...)
	}
	if len(rep.ChangedExpectations) > 0 {
		for i, f := range rep.ChangedExpectations {
			if g.blocksChange(cfg, credited[f.testID]) {
				rep.ChangedExpectations[i].Message += " (blocks verified)"
				blocking++
			}
		}
	}
	sortFindings(rep.Tamper)
	rep.Suite.Targeted = SuiteResult{Outcome: Pass, Targets: flatUnits(units), Duration: before.duration}
	if headFails {
		rep.Suite.Targeted.Outcome = Fail
	}
	rep.Suite.Full = SuiteResult{Outcome: Pass, Targets: []string{"all"}, Duration: head.duration}
	if fullTargets != nil {
		rep.Suite.Full.Targets = flatUnits(fullTargets)
	}
	switch {
	case len(headBroken) > 0:
		rep.Suite.Full.Outcome = BuildError
		rep.Suite.Full.Failed = append(rep.Suite.Full.Failed, headBroken...)
	case len(p2p.Failed) > 0:
		rep.Suite.Full.Outcome = Fail
	}
	rep.Suite.Full.Failed = append(rep.Suite.Full.Failed, p2p.Failed...)
	phase("judge", time.Now())
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}

	// 8. Evidence: mutants of the changed code against the credited tests.
	wantEvidence := len(creditedTests) > 0 && !headFails && len(p2p.Failed) == 0
	if (g.Evidence != nil || evFinish != nil) && wantEvidence {
		t0 = time.Now()
		p.Step("running mutation evidence on the changed code")
		var ms *MutationSummary
		var err error
		if evFinish != nil {
			finish := evFinish
			evFinish = nil
			ms, err = finish(creditedTests)
		} else {
			ms, err = g.Evidence(ctx, g.Runner, headDir, change, creditedTests)
		}
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			if f, ok := refusedFinding(err); ok {
				rep.Tamper = append(rep.Tamper, f)
			} else {
				envErrs = append(envErrs, "mutation evidence: "+err.Error())
			}
		}
		rep.Mutants = ms
		phase("evidence", t0)
	}

	// 9. The verdict, most serious first.
	g.decide(rep, cfg, verdictInputs{
		headFails:  headFails,
		headBroken: headBroken,
		cannotRun:  cannotRun,
		envErrs:    envErrs,
		blocking:   blocking,
	})
	return rep, nil
}

// verdictInputs are the facts decide weighs besides the report itself.
type verdictInputs struct {
	headFails  bool     // a candidate fails on the head
	headBroken []string // units that build or import on the base but not on the head
	cannotRun  []string // units that build or import on neither side
	envErrs    []string
	blocking   int // changed expectations that block verified
}

func (g *Gate) decide(rep *Report, cfg config.Config, in verdictInputs) {
	add := func(code, msg string) {
		if msg == "" {
			msg = reasonText[code]
		}
		rep.Reasons = append(rep.Reasons, Reason{code, msg})
	}
	p2pFailed := rep.PassToPass != nil && len(rep.PassToPass.Failed) > 0
	switch {
	case len(rep.Tamper) > 0 || in.blocking > 0:
		rep.Verdict = Tampered
		for _, f := range rep.Tamper {
			code := ReasonTamper
			if f.Code == FindingRefusedRead {
				code = ReasonRefusedRead
			}
			add(code, fmt.Sprintf("%s: %s", f.Path, f.Message))
		}
		for _, f := range rep.ChangedExpectations {
			if strings.HasSuffix(f.Message, "(blocks verified)") {
				add(ReasonChangedExpectations, fmt.Sprintf("%s: %s", f.Path, f.Message))
			}
		}
	case len(in.envErrs) > 0 || len(in.cannotRun) > 0:
		rep.Verdict = Error
		for _, e := range in.envErrs {
			add(ReasonEnvironment, e)
		}
		for _, u := range in.cannotRun {
			add(ReasonCannotRun, u)
		}
	case in.headFails || p2pFailed || len(in.headBroken) > 0:
		rep.Verdict = Failed
		for _, t := range rep.Tests {
			if t.Reason == ReasonFailsOnHead || t.Reason == ReasonNoBuildOnHead || t.Reason == ReasonTimeoutOnHead {
				add(t.Reason, fmt.Sprintf("%s %s", t.Name, t.ReasonText))
			}
		}
		if in.headFails {
			add(ReasonTargetedFailed, "")
		}
		if p2pFailed || len(in.headBroken) > 0 {
			add(ReasonFullFailed, suiteMessage(reasonText[ReasonPassToPass], rep.Suite.Full))
		}
	case len(rep.Credited()) == 0:
		rep.Verdict = Green
		if rep.Candidates == 0 {
			add(ReasonNoTestsChanged, "")
		} else {
			add(ReasonNothingCredited, "")
		}
	default:
		rep.Verdict = Verified
		add(ReasonCredited, fmt.Sprintf("%d test(s) fail on the base and pass with the change", len(rep.Credited())))
		if m := rep.Mutants; m != nil && len(m.Mutants) > 0 {
			if m.CreditedKills == 0 && !allKilled(m) {
				rep.Verdict = Green
				rep.Reasons = nil
				add(ReasonNoKill, "")
			} else if m.CreditedKills == 0 {
				// Every mutant of the changed code dies, to tests other
				// than the credited ones: what the change touched that
				// has a mutable site is pinned, and the credited tests
				// reach the part that has none (a regexp or other
				// literal, a table of data): their failure on the base
				// is the evidence. Nothing is left for them to kill.
				add(ReasonCredited, fmt.Sprintf("all %d mutants of the changed code are killed by other tests; the credited tests' change has nothing left to mutate", len(m.Mutants)))
			} else if max := cfg.Evidence.MaxSurvivors; max >= 0 && m.Survived > max {
				rep.Verdict = Green
				rep.Reasons = nil
				add(ReasonMutantsSurvive, fmt.Sprintf("%d mutants survive; the base's evidence.max_survivors is %d", m.Survived, max))
			}
		}
	}
}

// supportDecides finds the tests that pass on the head and fail with the
// base's test support laid over the head (the head's tests kept): their
// outcome is the head's support's doing, not the code's. A failure by a
// name the change adds to its support (a new helper) is not one.
func (g *Gate) supportDecides(change *Change, head, supp *sideRun, already []Finding) []Finding {
	seen := map[string]bool{}
	for _, f := range already {
		seen[f.testID] = true
	}
	var out []Finding
	for _, id := range supp.order {
		if seen[id] {
			continue
		}
		h, ok := head.results[id]
		if !ok || h.Outcome != Pass {
			continue
		}
		r := g.judgeBase(change, supp.results[id])
		if r.Outcome != Fail { // a timeout is not counted (changedExpectations says why)
			continue
		}
		p := r.Test.File
		if p == "" {
			p = r.Test.Package
		}
		out = append(out, Finding{
			Code:    FindingChangedExpectations,
			Path:    p,
			Message: fmt.Sprintf("%s passes on the head only with the head's test support; with the base's support it fails: %s", displayName(r.Test), firstLine(r.Detail)),
			testID:  id,
		})
	}
	return out
}

// allKilled reports whether every mutant of the summary was killed (none
// survived, went uncovered or timed out).
func allKilled(m *MutationSummary) bool {
	for _, x := range m.Mutants {
		if x.Verdict != "killed" {
			return false
		}
	}
	return len(m.Mutants) > 0
}

// blocksChange says whether a changed expectation keeps the change from
// being verified: the base's config decides; unset, an agent's change is
// always held, and a person's only when the rewritten test earns no credit
// (the new version of a test that fails on the base and passes on the head
// is the fix's own evidence).
func (g *Gate) blocksChange(cfg config.Config, testCredited bool) bool {
	if a := cfg.Gate.AllowChangedExpectations; a != nil {
		return !*a
	}
	return g.AgentTask || !testCredited
}

// judgeBase lets the adapter that ran r decide whether a missing name on
// the base is one the change adds.
func (g *Gate) judgeBase(change *Change, r TestResult) TestResult {
	if j, ok := g.adapter(r.Test.Language).(BaseFailureJudge); ok {
		return j.JudgeBaseFailure(change, r)
	}
	return r
}

// passToPass checks every test ID that passed on the untouched base against
// the head. It returns the summary, the tamper findings for tests that
// vanished, the units that no longer build or import, and the candidate
// units that build or import on neither side (the gate cannot judge the
// change's tests; other units broken on both sides are not its doing).
func passToPass(base, head *sideRun, candidate map[string]bool) (*PassToPass, []Finding, []string, []string) {
	out := &PassToPass{}
	var findings []Finding
	var headBroken, cannotRun []string
	brokenUnit := func(u UnitResult) bool {
		return u.Outcome == BuildError || u.Outcome == ImportError || u.Outcome == MissingSymbol
	}
	keys := make([]string, 0, len(head.units))
	for k := range head.units {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		hu := head.units[k]
		if !brokenUnit(hu) {
			continue
		}
		if bu, ok := base.units[k]; ok && brokenUnit(bu) {
			if candidate[k] || hu.Unit == "*" {
				cannotRun = append(cannotRun, fmt.Sprintf("%s: %s", hu.Unit, firstLine(hu.Detail)))
			}
		} else {
			headBroken = append(headBroken, hu.Unit)
		}
	}
	for _, id := range base.order {
		b := base.results[id]
		t := b.Test
		h := head.outcome(t)
		if b.Outcome != Pass {
			if isFailure(b.Outcome) && isFailure(h.Outcome) {
				out.PreExisting = append(out.PreExisting, displayName(t))
			}
			continue
		}
		out.Checked++
		switch h.Outcome {
		case Pass:
		case Skip:
			out.Vanished = append(out.Vanished, displayName(t))
			how := "skipped"
			if strings.HasPrefix(h.Detail, "xfail") {
				how = "marked xfail"
			}
			findings = append(findings, vanishedFinding(t, fmt.Sprintf("%s passed on the base and is %s on the head: %s", displayName(t), how, firstLine(h.Detail))))
		case NotRun:
			if u, ok := head.unitOf(t); ok && brokenUnit(u) {
				out.Failed = append(out.Failed, displayName(t))
				continue
			}
			out.Vanished = append(out.Vanished, displayName(t))
			findings = append(findings, vanishedFinding(t, displayName(t)+" passed on the base and was not run on the head: "+notRunHow(head, t)))
		default:
			out.Failed = append(out.Failed, displayName(t))
		}
	}
	// A test the base did not have that fails on the head is the
	// change's failure too.
	for _, id := range head.order {
		h := head.results[id]
		if _, ok := base.results[id]; ok || !isFailure(h.Outcome) {
			continue
		}
		if u, ok := base.unitOf(h.Test); ok && brokenUnit(u) {
			continue // the base could not even build it: counted below if it stays broken
		}
		out.Failed = append(out.Failed, displayName(h.Test))
	}
	return out, findings, headBroken, cannotRun
}

func notRunHow(head *sideRun, t Test) string {
	u, ok := head.unitOf(t)
	switch {
	case !ok && t.Language == "go":
		return "its package has no tests that ran on the head (deleted, excluded by build tags or file names, or its test binary ran nothing)"
	case !ok:
		return "its test file collected no tests on the head (deleted, __test__ = False, excluded by configuration, or not collected)"
	case u.Detail != "":
		return u.Detail
	case t.Language == "go":
		return "its package's tests ran on the head, but this test did not (removed, renamed, excluded by build tags, or TestMain or a helper did not run it)"
	default:
		return "its test file ran on the head, but this test was not collected or was deselected (removed, shadowed by a second definition, renamed, or filtered by a hook or configuration)"
	}
}

func vanishedFinding(t Test, msg string) Finding {
	p := t.File
	if p == "" {
		p = t.Package
	}
	return Finding{Code: FindingTestVanished, Path: p, Message: msg}
}

func isFailure(o Outcome) bool {
	switch o {
	case Fail, Timeout, Flaky, BuildError, ImportError, MissingSymbol:
		return true
	}
	return false
}

// displayName is how a test ID is named in reports: "./pkg.TestX/sub" for
// Go, the pytest node ID for Python.
func displayName(t Test) string {
	if t.Language == "go" {
		if t.Package == "" || t.Package == "." {
			return t.Name // the module's root package
		}
		return t.Package + "." + t.Name
	}
	return t.Package + "::" + t.Name
}

// alteredReports are the tests whose outcome a repository plugin rewrote,
// as the adapter marked them (Detail starting with reportAlteredMarker).
func alteredReports(s *sideRun) []Finding {
	var out []Finding
	for _, id := range s.order {
		r := s.results[id]
		if strings.HasPrefix(r.Detail, ReportAlteredMarker) {
			out = append(out, Finding{Code: FindingReportAltered, Path: r.Test.Package, Message: displayName(r.Test) + ": " + firstLine(r.Detail)})
		}
	}
	return out
}

// ReportAlteredMarker starts the detail of a result whose runner saw the
// test fail but whose report (from a plugin of the repository) said
// otherwise. The result's outcome is the runner's own.
const ReportAlteredMarker = "report altered by the repository:"

// changedExpectations compares the base's tests on the untouched base with
// the same tests against the head: a test that passed and now fails by
// assertion (or exception) pinned something the change rewrote. Build and
// import failures are API changes, not changed expectations; a test that
// fails on the head as well is a pass-to-pass failure already.
func changedExpectations(base, head, old *sideRun) []Finding {
	var out []Finding
	for _, id := range old.order {
		o := old.results[id]
		b, ok := base.results[id]
		// A timeout is not counted: these runs have the targeted test
		// timeout, and under load a large package's whole run can hit it
		// on this side alone (the real corpus's decimal cases did).
		if !ok || b.Outcome != Pass || o.Outcome != Fail {
			continue
		}
		if h, ok := head.results[id]; ok && h.Outcome != Pass {
			continue
		}
		p := o.Test.File
		if p == "" {
			p = o.Test.Package
		}
		out = append(out, Finding{
			Code:    FindingChangedExpectations,
			Path:    p,
			Message: fmt.Sprintf("%s passed on the base; the base's version fails against the head: %s", displayName(o.Test), firstLine(o.Detail)),
			testID:  id,
		})
	}
	return out
}

func mergeUnits(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func flatUnits(m map[string][]string) []string {
	var out []string
	for _, us := range m {
		out = append(out, us...)
	}
	sort.Strings(out)
	return out
}

func suiteMessage(prefix string, s SuiteResult) string {
	msg := prefix
	if len(s.Failed) > 0 {
		names := s.Failed
		if len(names) > 5 {
			names = append(append([]string(nil), names[:5]...), fmt.Sprintf("and %d more", len(s.Failed)-5))
		}
		msg += ": " + strings.Join(names, ", ")
	} else if s.Detail != "" {
		msg += ": " + firstLine(s.Detail)
	}
	return msg
}
