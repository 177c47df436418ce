package verify

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

// The judging steps of checkRun, from the runs' results to the verdict.

// failToPass takes every test ID of the candidate units, its outcome on the
// base with the head's tests and on the head, and repeats the ones that
// fail on the first and pass on the second (flake_runs).
func (r *checkRun) failToPass() bool {
	t0 := time.Now()
	r.inUnits = map[string]bool{}
	for lang, us := range r.units {
		for _, u := range us {
			r.inUnits[unitKey(lang, u)] = true
		}
	}
	r.cands = candidateTests(r.inUnits, r.before, r.head)
	r.rep.Candidates = len(r.cands)
	r.baseRuns = map[string][]TestResult{}
	r.headRuns = map[string][]TestResult{}
	var f2p []Test
	for _, t := range r.cands {
		b := r.g.judgeBase(r.change, r.before.outcome(t))
		h := r.head.outcome(t)
		r.baseRuns[t.ID()] = []TestResult{b}
		r.headRuns[t.ID()] = []TestResult{h}
		if b.Outcome == Fail && h.Outcome == Pass {
			f2p = append(f2p, t)
		}
	}
	var ranBefore []TestResult
	if rounds := r.cfg.Gate.FlakeRuns - 1; rounds > 0 && len(f2p) > 0 {
		var ok bool
		if ranBefore, ok = r.repeat(f2p, rounds); !ok {
			return false
		}
	}
	r.keepBefore(ranBefore)
	// Mutation evidence copies the head's snapshot: no binary of the
	// runs goes with it.
	r.g.dropBinaries(r.beforeDir, r.headDir)
	r.timing("repeats", t0)
	if err := r.waitStatic(); err != nil {
		return r.fail(err)
	}
	return true
}

// candidateTests are the tests of the candidate units that reported on
// the sides, sorted by ID.
func candidateTests(inUnits map[string]bool, sides ...*sideRun) []Test {
	var cands []Test
	seen := map[string]bool{}
	for _, s := range sides {
		for _, id := range s.order {
			t := s.results[id].Test
			if !seen[id] && inUnits[unitKey(t.Language, t.Package)] {
				seen[id] = true
				cands = append(cands, t)
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].ID() < cands[j].ID() })
	return cands
}

// repeat runs the fail-to-pass candidates rounds more times on each side,
// each run in its own process, and adds the runs to the first ones. A
// candidate's rounds on the before snapshot stored with its run are read,
// not run, and the head's rounds started early (startHeadRepeats) are
// taken when they cover every candidate. It returns the before rounds it
// ran, for keepBefore.
func (r *checkRun) repeat(f2p []Test, rounds int) ([]TestResult, bool) {
	r.p.Step("repeating %d fail-to-pass candidates %d more times on each side, each run in its own process", len(f2p), rounds)
	var bres, hres, ranBefore []TestResult
	var errs []error
	var mu sync.Mutex
	// Each round's deadline: test_timeout under the load, and at least
	// what the first runs of the same tests measured allows.
	var measured time.Duration
	for _, t := range f2p {
		measured += max(r.before.outcome(t).Duration, r.head.outcome(t).Duration)
	}
	opts := RunOptions{Count: rounds, Timeout: r.load.Deadline(r.cfg.Gate.TestTimeout.Duration, measured), Separate: true}
	run := func(dir string, tests []Test, into *[]TestResult) {
		for lang, ts := range groupByLanguage(tests) {
			res, err := r.g.adapter(lang).RunTests(r.ctx, r.g.Runner, dir, ts, opts)
			mu.Lock()
			*into = append(*into, res...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}
	}
	var toRun []Test
	for _, t := range f2p {
		if stored := r.storedRounds(t, rounds); stored != nil {
			bres = append(bres, stored...)
		} else {
			toRun = append(toRun, t)
		}
	}
	before := func() {
		defer r.timing("repeat_before", time.Now())
		run(r.beforeDir, toRun, &ranBefore)
	}
	head := func() {
		defer r.timing("repeat_head", time.Now())
		if early, ok := r.takeHeadRepeats(f2p); ok {
			hres = early
			return
		}
		run(r.headDir, f2p, &hres)
	}
	if len(toRun) == 0 {
		before = nil
	}
	parallel(sides(), before, head)
	if r.cancelled() {
		return nil, false
	}
	if len(errs) > 0 {
		r.g.errorReport(r.rep, fmt.Errorf("repeating fail-to-pass candidates: %w", errs[0]))
		return nil, false // the report says why; Check returns no error
	}
	for _, res := range append(bres, ranBefore...) {
		r.baseRuns[res.Test.ID()] = append(r.baseRuns[res.Test.ID()], r.g.judgeBase(r.change, res))
	}
	collect(r.headRuns, hres)
	return ranBefore, true
}

// credit judges every candidate into the report: the credited tests, and
// whether a candidate fails on the head or could not run.
func (r *checkRun) credit() {
	r.credited = map[string]bool{}
	for _, t := range r.cands {
		tr := r.candidateReport(t)
		if tr.Credited {
			r.credited[t.ID()] = true
			r.creditedTests = append(r.creditedTests, t)
		}
		switch tr.HeadOutcome {
		case Fail, BuildError, ImportError, MissingSymbol, Timeout:
			// A candidate failing on the head counts against the change
			// unless it failed on the untouched base as well.
			if b, ok := r.base.results[t.ID()]; !ok || b.Outcome == Pass || b.Outcome == Skip {
				r.headFails = true
			}
		}
		if tr.BaseOutcome == EnvError || tr.HeadOutcome == EnvError {
			r.envErrs = append(r.envErrs, firstNonEmpty(tr.HeadDetail, tr.BaseDetail))
		}
		if tr.Changed || tr.Credited || tr.BaseOutcome != Pass || tr.HeadOutcome != Pass {
			r.rep.Tests = append(r.rep.Tests, tr)
		}
	}
}

// candidateReport is t's report line: its runs on both sides judged, the
// untouched base as the control, the diff's hint added.
func (r *checkRun) candidateReport(t Test) TestReport {
	var control []TestResult
	if b, ok := r.base.results[t.ID()]; ok {
		control = []TestResult{b}
	}
	tr := judge(t, r.baseRuns[t.ID()], r.headRuns[t.ID()], control)
	tr.Changed = r.hints.hinted[t.ID()]
	if tr.File == "" {
		tr.File = r.hints.hintFile[t.ID()]
	}
	tr.Runs = len(r.headRuns[t.ID()])
	return tr
}

// passToPass holds the head to every test that passed on the untouched
// base; a test that vanished is a finding. The sides' environment errors
// are gathered here too, with the full runs.
func (r *checkRun) passToPass() {
	p2p, vanished, headBroken, cannotRun := passToPass(r.base, r.head, r.inUnits)
	r.rep.PassToPass = p2p
	r.rep.Tamper = append(r.rep.Tamper, vanished...)
	r.headBroken, r.cannotRun = headBroken, cannotRun
	for _, s := range []*sideRun{r.base, r.head, r.before} {
		r.envErrs = append(r.envErrs, s.env...)
	}
	if r.old != nil {
		r.envErrs = append(r.envErrs, r.old.env...)
	}
	if r.supp != nil && r.supp != r.old {
		r.envErrs = append(r.envErrs, r.supp.env...)
	}
}

// tampering adds what the runs showed: reports a repository plugin
// rewrote, and what the confined reader refused of any side's reports
// (each once).
func (r *checkRun) tampering() {
	for _, s := range []*sideRun{r.before, r.head} {
		r.rep.Tamper = append(r.rep.Tamper, alteredReports(s)...)
	}
	seenRefusal := map[Finding]bool{}
	for _, s := range []*sideRun{r.base, r.head, r.before, r.old, r.supp} {
		for _, f := range s.refusals() {
			if !seenRefusal[f] {
				seenRefusal[f] = true
				r.rep.Tamper = append(r.rep.Tamper, f)
			}
		}
	}
	sortFindings(r.rep.Tamper)
}

// changedExpectations runs nothing: it compares the base's tests on the
// head (old) and the base's test support under the head's tests with the
// full runs, and counts the findings that block verified.
func (r *checkRun) changedExpectations() {
	rep := r.rep
	if r.old != nil {
		rep.ChangedExpectations = changedExpectations(r.base, r.head, r.old, r.infraLeftOut)
	}
	if r.supp != nil {
		rep.ChangedExpectations = append(rep.ChangedExpectations, r.g.supportDecides(r.change, r.head, r.supp, rep.ChangedExpectations)...)
	}
	for i, f := range rep.ChangedExpectations {
		if r.g.blocksChange(r.cfg, r.credited[f.testID] && !f.underSupport) {
			rep.ChangedExpectations[i].Message += " (blocks verified)"
			r.blocking++
		}
	}
}

// infraLeftOut says which of the test files and support the change added
// (left out of the head with the base's tests) sit beside t, and what each
// does before any test runs, as its adapter can tell: "" when none.
func (r *checkRun) infraLeftOut(t Test) string {
	near := nearTest(t, r.addedInfra)
	if len(near) == 0 {
		near = r.addedInfra
	}
	if len(near) == 0 {
		return ""
	}
	d, _ := r.g.adapter(t.Language).(SetupDescriber)
	parts := make([]string, len(near))
	for i, p := range near {
		parts[i] = p
		if f, ok := r.change.File(p); ok && d != nil {
			if what := d.DescribeSetup(p, f.Head); what != "" {
				parts[i] += " (" + what + ")"
			}
		}
	}
	return strings.Join(parts, ", ")
}

// nearTest are the files of paths in t's unit's directory, or, for a test
// with a file of its own (Python), in that file's directory or above it
// (where conftest.py and its plugins apply).
func nearTest(t Test, paths []string) []string {
	var out []string
	if t.File != "" {
		d := path.Dir(t.File)
		for _, p := range paths {
			if pd := path.Dir(p); pd == "." || pd == d || strings.HasPrefix(d, pd+"/") {
				out = append(out, p)
			}
		}
		return out
	}
	d := strings.TrimPrefix(t.Package, "./")
	for _, p := range paths {
		if path.Dir(p) == d {
			out = append(out, p)
		}
	}
	return out
}

// suites sums the runs up as the report's targeted and full suites.
func (r *checkRun) suites() bool {
	rep := r.rep
	rep.Suite.Targeted = SuiteResult{Outcome: Pass, Targets: flatUnits(r.units), Duration: r.before.duration}
	if r.headFails {
		rep.Suite.Targeted.Outcome = Fail
	}
	rep.Suite.Full = SuiteResult{Outcome: Pass, Targets: []string{"all"}, Duration: r.head.duration}
	if r.fullTargets != nil {
		rep.Suite.Full.Targets = flatUnits(r.fullTargets)
	}
	switch {
	case len(r.headBroken) > 0:
		rep.Suite.Full.Outcome = BuildError
		rep.Suite.Full.Failed = append(rep.Suite.Full.Failed, r.headBroken...)
	case len(rep.PassToPass.Failed) > 0:
		rep.Suite.Full.Outcome = Fail
	}
	rep.Suite.Full.Failed = append(rep.Suite.Full.Failed, rep.PassToPass.Failed...)
	r.timing("judge", time.Now())
	return !r.cancelled()
}

// evidence runs mutants of the changed code against the credited tests,
// when there are credited tests and nothing on the head fails.
func (r *checkRun) evidence() bool {
	want := len(r.creditedTests) > 0 && !r.headFails && len(r.rep.PassToPass.Failed) == 0
	if (r.g.Evidence == nil && r.evFinish == nil) || !want {
		return true
	}
	t0 := time.Now()
	r.p.Step("running mutation evidence on the changed code")
	var summary *MutationSummary
	var err error
	if r.evFinish != nil {
		finish := r.evFinish
		r.evFinish = nil // taken: not abandoned
		summary, err = finish(r.creditedTests)
	} else {
		summary, err = r.g.Evidence(r.ctx, r.g.Runner, r.headDir, r.change, r.creditedTests)
	}
	if err != nil {
		if r.cancelled() {
			return false
		}
		if f, ok := refusedFinding(err); ok {
			r.rep.Tamper = append(r.rep.Tamper, f)
		} else {
			summary = unfinishedEvidence(err)
		}
	}
	r.rep.Mutants = summary
	r.timing("evidence", t0)
	return true
}

// verdict decides, most serious first.
func (r *checkRun) verdict() {
	r.g.decide(r.rep, r.cfg, verdictInputs{
		headTimeouts: headTimeouts(r.base, r.head),
		headFails:    r.headFails,
		headBroken:   r.headBroken,
		cannotRun:    r.cannotRun,
		envErrs:      r.envErrs,
		blocking:     r.blocking,
	})
}

// unfinishedEvidence is the summary of mutation evidence that could not
// finish (a baseline that timed out twice, a toolchain it could not
// start): it established nothing, no mutant ran, and it says so. The
// verdict stands on what the tests established: evidence only ever holds
// a verified change back by what its mutants showed, never by failing to
// run them.
func unfinishedEvidence(err error) *MutationSummary {
	return &MutationSummary{Note: "mutation evidence did not finish and established nothing (no mutant of the changed code ran): " +
		firstLine(err.Error()) + "; the verdict is what the tests established"}
}
