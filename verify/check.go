package verify

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
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

// verdictInputs are the facts decide weighs besides the report itself.
type verdictInputs struct {
	headFails  bool     // a candidate fails on the head
	headBroken []string // units that build or import on the base but not on the head
	cannotRun  []string // units that build or import on neither side
	envErrs    []string
	blocking   int // changed expectations that block verified
	// headTimeouts are the tests that passed on the base, or are new,
	// and timed out on the head after the retry, by display name, with
	// their details (headTimeouts).
	headTimeouts map[string]string
}

// decide gives the report its verdict and reasons, most serious first.
func (g *Gate) decide(rep *Report, cfg config.Config, in verdictInputs) {
	p2pFailed := rep.PassToPass != nil && len(rep.PassToPass.Failed) > 0
	g.setInfrastructureAside(rep, cfg)
	switch {
	case len(rep.Tamper) > 0 || in.blocking > 0:
		decideTampered(rep)
	case len(in.envErrs) > 0 || len(in.cannotRun) > 0:
		rep.Verdict = Error
		for _, e := range in.envErrs {
			addReason(rep, ReasonEnvironment, e)
		}
		for _, u := range in.cannotRun {
			addReason(rep, ReasonCannotRun, u)
		}
	case onlyTimeouts(rep, in, p2pFailed):
		decideTimedOut(rep, in.headTimeouts)
	case in.headFails || p2pFailed || len(in.headBroken) > 0:
		decideFailed(rep, in, p2pFailed)
	case len(rep.Credited()) == 0:
		rep.Verdict = Green
		if rep.Candidates == 0 {
			addReason(rep, ReasonNoTestsChanged, "")
		} else {
			addReason(rep, ReasonNothingCredited, "")
		}
	case len(rep.ChangedExpectations) > 0 && cfg.Gate.AllowChangedExpectations == nil:
		decideRewritten(rep)
	default:
		decideVerified(rep, cfg)
	}
}

// decideRewritten is a person's change whose tests pass, credited, but
// that rewrote what an existing test pinned: the base's version of the
// test passed on the base and fails on the head, and its new version
// passes. Tests cannot tell a fix of behaviour the old test pinned wrongly
// from a change of behaviour it pinned rightly, so the change is green
// with the rewrite named, for the person to review; a base that sets
// gate.allow_changed_expectations = true has it verified. (An agent's
// rewrite is tampered: blocksChange.)
func decideRewritten(rep *Report) {
	rep.Verdict = Green
	for _, f := range rep.ChangedExpectations {
		addReason(rep, ReasonChangedExpectations, fmt.Sprintf("%s: %s: an expected result was rewritten; review it (tests cannot tell a fix of what the old test pinned from a change of it)", f.Path, f.Message))
	}
}

// addReason adds a reason to the report; an empty msg is the code's
// sentence.
func addReason(rep *Report, code, msg string) {
	if msg == "" {
		msg = reasonText[code]
	}
	rep.Reasons = append(rep.Reasons, Reason{code, msg})
}

// decideTampered names every tamper finding and every changed
// expectation that blocks verified.
func decideTampered(rep *Report) {
	rep.Verdict = Tampered
	for _, f := range rep.Tamper {
		code := ReasonTamper
		if f.Code == FindingRefusedRead {
			code = ReasonRefusedRead
		}
		addReason(rep, code, fmt.Sprintf("%s: %s", f.Path, f.Message))
	}
	for _, f := range rep.ChangedExpectations {
		if strings.HasSuffix(f.Message, "(blocks verified)") {
			addReason(rep, ReasonChangedExpectations, fmt.Sprintf("%s: %s", f.Path, f.Message))
		}
	}
}

// decideFailed names the candidates that fail on the head, and the
// suites that fail.
func decideFailed(rep *Report, in verdictInputs, p2pFailed bool) {
	rep.Verdict = Failed
	for _, t := range rep.Tests {
		if t.Reason == ReasonFailsOnHead || t.Reason == ReasonNoBuildOnHead || t.Reason == ReasonTimeoutOnHead {
			addReason(rep, t.Reason, fmt.Sprintf("%s %s", t.Name, t.ReasonText))
		}
	}
	if in.headFails {
		addReason(rep, ReasonTargetedFailed, "")
	}
	if p2pFailed || len(in.headBroken) > 0 {
		addReason(rep, ReasonFullFailed, suiteMessage(reasonText[ReasonPassToPass], rep.Suite.Full))
	}
}

// decideVerified credits the change, unless the mutation evidence takes
// it back to green.
func decideVerified(rep *Report, cfg config.Config) {
	rep.Verdict = Verified
	addReason(rep, ReasonCredited, fmt.Sprintf("%d test(s) fail on the base and pass with the change", len(rep.Credited())))
	m := rep.Mutants
	if m == nil || len(m.Mutants) == 0 {
		return
	}
	if m.CreditedKills == 0 && !allKilled(m) {
		rep.Verdict = Green
		rep.Reasons = nil
		addReason(rep, ReasonNoKill, "")
	} else if m.CreditedKills == 0 {
		// Every mutant of the changed code dies, to tests other than the
		// credited ones: what the change touched that has a mutable site
		// is pinned, and the credited tests reach the part that has none
		// (a regexp or other literal, a table of data): their failure on
		// the base is the evidence. Nothing is left for them to kill.
		addReason(rep, ReasonCredited, fmt.Sprintf("all %d mutants of the changed code are killed by other tests; the credited tests' change has nothing left to mutate", len(m.Mutants)))
	} else if max := cfg.Evidence.MaxSurvivors; max >= 0 && m.Survived > max {
		rep.Verdict = Green
		rep.Reasons = nil
		addReason(rep, ReasonMutantsSurvive, fmt.Sprintf("%d mutants survive; the base's evidence.max_survivors is %d", m.Survived, max))
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
			Code:         FindingChangedExpectations,
			Path:         p,
			Message:      fmt.Sprintf("%s passes on the head only with the head's test support; with the base's support it fails: %s", displayName(r.Test), firstLine(r.Detail)),
			testID:       id,
			underSupport: true,
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
// is the fix's own evidence). A test that passes only with the head's
// test support (a lax helper) is no evidence, credited or not: callers
// pass testCredited false for it.
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
			if u, ok := head.unitOf(t); ok && (brokenUnit(u) || u.Outcome == Timeout) {
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
//
// leftOut names the test files the change added that old left out beside
// a test ("" when none): a base test that passed on the head and fails
// without them passes only because of them (an init, a package variable or
// a TestMain that swaps what the code under test calls).
func changedExpectations(base, head, old *sideRun, leftOut func(Test) string) []Finding {
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
		msg := fmt.Sprintf("%s passed on the base; the base's version fails against the head: %s", displayName(o.Test), firstLine(o.Detail))
		if added := leftOut(o.Test); added != "" {
			msg = fmt.Sprintf("%s passed on the base and on the head; with the base's test files alone (the change adds %s) it fails against the head: %s", displayName(o.Test), added, firstLine(o.Detail))
		}
		out = append(out, Finding{Code: FindingChangedExpectations, Path: p, Message: msg, testID: id})
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
