package verify

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
)

// Check is a change-wide rule that needs no test run: tamper rules, secret
// scanning. The gate takes them as values so verify does not import its own
// sub-packages.
type Check func(ctx context.Context, change *Change, cfg config.Config) ([]Finding, error)

// Evidence runs mutation evidence on the head snapshot for the gate. It
// returns nil when the change has no mutable code.
type Evidence func(ctx context.Context, r sandbox.Runner, headDir string, change *Change, credited []Test) (*MutationSummary, error)

// Gate decides whether a change is verified.
type Gate struct {
	Runner   sandbox.Runner
	Adapters []Adapter
	Checks   []Check
	Evidence Evidence // optional
	Progress Progress
}

// reasonText is the sentence for every reason code.
var reasonText = map[string]string{
	ReasonCredited:        "fails on the base by assertion and passes with the change",
	ReasonPassesOnBase:    "already passes on the base: it does not show the change does anything",
	ReasonNoBuildOnBase:   "does not build on the base (it uses code the change adds): no evidence of a fix",
	ReasonImportOnBase:    "does not import on the base (it uses code the change adds): no evidence of a fix",
	ReasonMissingOnBase:   "fails on the base only because a name the change adds is missing",
	ReasonSkippedOnBase:   "is skipped on the base",
	ReasonTimeoutOnBase:   "timed out on the base",
	ReasonEnvOnBase:       "could not run on the base (environment error)",
	ReasonNotRunOnBase:    "produced no result on the base",
	ReasonBaseBroken:      "the base's own version of this test already fails on the base",
	ReasonFlaky:           "repeated runs disagreed",
	ReasonFailsOnHead:     "fails with the change",
	ReasonSkippedOnHead:   "is skipped with the change",
	ReasonNoBuildOnHead:   "does not build with the change",
	ReasonTimeoutOnHead:   "timed out with the change",
	ReasonNotRunOnHead:    "produced no result with the change",
	ReasonEnvOnHead:       "could not run with the change (environment error)",
	ReasonNoTestsChanged:  "the change adds or modifies no test",
	ReasonNoChange:        "base and head are the same commit (or the same tree): there is nothing to check; pass --base REV to compare with an earlier commit, or change something first",
	ReasonTargetedFailed:  "the tests of the packages the change reaches fail",
	ReasonFullFailed:      "the full suite fails",
	ReasonTamper:          "the change weakens the tests or touches protected paths",
	ReasonNothingCredited: "no new or modified test fails on the base and passes with the change",
	ReasonMutantsSurvive:  "more mutants survive than evidence.max_survivors allows",
	ReasonNoKill:          "the changed code has mutants, but no credited test kills any of them",
}

// ReasonText returns the sentence for a reason code.
func ReasonText(code string) string { return reasonText[code] }

// Check runs the gate on change with cfg (read from the base by the caller).
// The error is for failures that leave no report at all (cancellation);
// everything else, including a missing toolchain, is a Report with verdict
// Error and its reasons.
func (g *Gate) Check(ctx context.Context, change *Change, cfg config.Config) (*Report, error) {
	start := time.Now()
	p := g.Progress
	if p == nil {
		p = NoProgress{}
	}
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
	phase := func(name string, t0 time.Time) { rep.Timings[name] += ms(time.Since(t0)) }

	if len(change.Files) == 0 {
		// Green promises that the suites pass; with nothing changed none
		// ran, so the gate says it could not decide, and why.
		rep.Verdict = Error
		rep.Reasons = []Reason{{ReasonNoChange, reasonText[ReasonNoChange]}}
		rep.Suite.Targeted = SuiteResult{Outcome: NotRun}
		rep.Suite.Full = SuiteResult{Outcome: NotRun}
		return rep, nil
	}

	// 1. Static checks: tamper rules of every adapter and the change-wide ones.
	t0 := time.Now()
	p.Step("checking the diff for tampering")
	for _, a := range g.adaptersFor(change) {
		fs, err := a.Tamper(ctx, change)
		if err != nil {
			return g.errorReport(rep, fmt.Errorf("%s tamper check: %w", a.Language(), err)), ctxErr(ctx)
		}
		rep.Tamper = append(rep.Tamper, fs...)
	}
	for _, c := range g.Checks {
		fs, err := c(ctx, change, cfg)
		if err != nil {
			return g.errorReport(rep, err), ctxErr(ctx)
		}
		rep.Tamper = append(rep.Tamper, fs...)
	}
	sortFindings(rep.Tamper)
	phase("tamper", t0)

	// 2. Which tests the change adds or modifies.
	t0 = time.Now()
	var tests []Test
	for _, a := range g.adaptersFor(change) {
		ts, err := a.ChangedTests(ctx, change)
		if err != nil {
			return g.errorReport(rep, fmt.Errorf("finding changed %s tests: %w", a.Language(), err)), ctxErr(ctx)
		}
		tests = append(tests, ts...)
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].ID() < tests[j].ID() })
	phase("discover", t0)

	// 3. Snapshots: the base with the head's test files over it, and the head.
	t0 = time.Now()
	p.Step("laying out snapshots of base and head")
	baseDir, err := change.Workspace.Materialize(ctx, BaseSide, g.testOverlay(change))
	if err != nil {
		return g.errorReport(rep, fmt.Errorf("snapshot of the base: %w", err)), ctxErr(ctx)
	}
	headDir, err := change.Workspace.Materialize(ctx, HeadSide, nil)
	if err != nil {
		return g.errorReport(rep, fmt.Errorf("snapshot of the head: %w", err)), ctxErr(ctx)
	}
	phase("snapshot", t0)

	runs := cfg.Gate.FlakeRuns
	opts := RunOptions{Count: runs, Timeout: cfg.Gate.TestTimeout.Duration}
	byLang := groupByLanguage(tests)

	// 4. Fail before: every changed test on base+overlay, then pass after on head.
	t0 = time.Now()
	baseRes := map[string][]TestResult{}
	headRes := map[string][]TestResult{}
	for _, a := range g.Adapters {
		ts := byLang[a.Language()]
		if len(ts) == 0 {
			continue
		}
		p.Step("running %d new or modified %s tests on the base (%d× each)", len(ts), a.Language(), runs)
		res, err := a.RunTests(ctx, g.Runner, baseDir, ts, opts)
		if err != nil {
			return g.errorReport(rep, fmt.Errorf("running %s tests on the base: %w", a.Language(), err)), ctxErr(ctx)
		}
		collect(baseRes, res)
	}
	phase("base", t0)
	t0 = time.Now()
	for _, a := range g.Adapters {
		ts := byLang[a.Language()]
		if len(ts) == 0 {
			continue
		}
		p.Step("running %d new or modified %s tests on the head (%d× each)", len(ts), a.Language(), runs)
		res, err := a.RunTests(ctx, g.Runner, headDir, ts, opts)
		if err != nil {
			return g.errorReport(rep, fmt.Errorf("running %s tests on the head: %w", a.Language(), err)), ctxErr(ctx)
		}
		collect(headRes, res)
	}
	phase("head", t0)

	// 5. Control: a modified test that fails on base+overlay only earns
	// credit if the base's own version passes on the untouched base;
	// otherwise the base was already broken there.
	t0 = time.Now()
	var control []Test
	for _, t := range tests {
		if summarize(baseRes[t.ID()]).Outcome == Fail && existedOnBase(t, change) {
			control = append(control, t)
		}
	}
	controlRes := map[string][]TestResult{}
	if len(control) > 0 {
		pristine, err := change.Workspace.Materialize(ctx, BaseSide, nil)
		if err != nil {
			return g.errorReport(rep, fmt.Errorf("snapshot of the untouched base: %w", err)), ctxErr(ctx)
		}
		for lang, ts := range groupByLanguage(control) {
			a := g.adapter(lang)
			p.Step("control run of %d %s tests on the untouched base", len(ts), lang)
			res, err := a.RunTests(ctx, g.Runner, pristine, ts, RunOptions{Count: 1, Timeout: opts.Timeout})
			if err != nil {
				return g.errorReport(rep, fmt.Errorf("control run of %s tests: %w", lang, err)), ctxErr(ctx)
			}
			collect(controlRes, res)
		}
	}
	phase("control", t0)

	headFails := false
	var envErrs []string
	for _, t := range tests {
		tr := judge(t, baseRes[t.ID()], headRes[t.ID()], controlRes[t.ID()])
		if tr.HeadOutcome == Fail || tr.HeadOutcome == BuildError || tr.HeadOutcome == ImportError ||
			tr.HeadOutcome == MissingSymbol || tr.HeadOutcome == Timeout {
			headFails = true
		}
		if tr.BaseOutcome == EnvError || tr.HeadOutcome == EnvError {
			envErrs = append(envErrs, firstNonEmpty(tr.HeadDetail, tr.BaseDetail))
		}
		rep.Tests = append(rep.Tests, tr)
	}
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}

	// 6. Targeted, then full, on the head.
	t0 = time.Now()
	rep.Suite.Targeted = g.runSuites(ctx, headDir, change, true, cfg)
	phase("targeted", t0)
	t0 = time.Now()
	switch {
	case !passed(rep.Suite.Targeted):
		rep.Suite.Full = SuiteResult{Outcome: NotRun, Detail: "skipped: the targeted suite did not pass"}
	case cfg.Gate.SkipFullSuite:
		rep.Suite.Full = SuiteResult{Outcome: NotRun, Detail: "skipped: gate.skip_full_suite is set in the base's config"}
	default:
		rep.Suite.Full = g.runSuites(ctx, headDir, change, false, cfg)
	}
	phase("full", t0)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}

	// 7. Evidence: mutants of the changed code against the credited tests.
	var credited []Test
	for i, t := range tests {
		if rep.Tests[i].Credited {
			credited = append(credited, t)
		}
	}
	if g.Evidence != nil && len(credited) > 0 && passed(rep.Suite.Targeted) {
		t0 = time.Now()
		p.Step("running mutation evidence on the changed code")
		ms, err := g.Evidence(ctx, g.Runner, headDir, change, credited)
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			envErrs = append(envErrs, "mutation evidence: "+err.Error())
		}
		rep.Mutants = ms
		phase("evidence", t0)
	}

	// 8. The verdict, most serious first.
	g.decide(rep, cfg, headFails, envErrs)
	return rep, nil
}

func (g *Gate) decide(rep *Report, cfg config.Config, headFails bool, envErrs []string) {
	add := func(code, msg string) {
		if msg == "" {
			msg = reasonText[code]
		}
		rep.Reasons = append(rep.Reasons, Reason{code, msg})
	}
	suiteEnv := rep.Suite.Targeted.Outcome == EnvError || rep.Suite.Full.Outcome == EnvError
	switch {
	case len(rep.Tamper) > 0:
		rep.Verdict = Tampered
		for _, f := range rep.Tamper {
			add(ReasonTamper, fmt.Sprintf("%s: %s", f.Path, f.Message))
		}
	case len(envErrs) > 0 || suiteEnv:
		rep.Verdict = Error
		for _, e := range envErrs {
			add(ReasonEnvironment, e)
		}
		for _, s := range []SuiteResult{rep.Suite.Targeted, rep.Suite.Full} {
			if s.Outcome == EnvError {
				add(ReasonEnvironment, s.Detail)
			}
		}
	case headFails || !passed(rep.Suite.Targeted) || !passed(rep.Suite.Full):
		rep.Verdict = Failed
		for _, t := range rep.Tests {
			if t.Reason == ReasonFailsOnHead || t.Reason == ReasonNoBuildOnHead || t.Reason == ReasonTimeoutOnHead {
				add(t.Reason, fmt.Sprintf("%s %s", t.Name, t.ReasonText))
			}
		}
		if !passed(rep.Suite.Targeted) {
			add(ReasonTargetedFailed, suiteMessage(reasonText[ReasonTargetedFailed], rep.Suite.Targeted))
		} else if !passed(rep.Suite.Full) {
			add(ReasonFullFailed, suiteMessage(reasonText[ReasonFullFailed], rep.Suite.Full))
		}
	case len(rep.Credited()) == 0:
		rep.Verdict = Green
		if len(rep.Tests) == 0 {
			add(ReasonNoTestsChanged, "")
		} else {
			add(ReasonNothingCredited, "")
		}
	default:
		rep.Verdict = Verified
		add(ReasonCredited, fmt.Sprintf("%d test(s) fail on the base and pass with the change", len(rep.Credited())))
		if m := rep.Mutants; m != nil && len(m.Mutants) > 0 {
			if m.CreditedKills == 0 {
				rep.Verdict = Green
				rep.Reasons = nil
				add(ReasonNoKill, "")
			} else if max := cfg.Evidence.MaxSurvivors; max >= 0 && m.Survived > max {
				rep.Verdict = Green
				rep.Reasons = nil
				add(ReasonMutantsSurvive, fmt.Sprintf("%d mutants survive; the base's evidence.max_survivors is %d", m.Survived, max))
			}
		}
	}
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

// runSuites runs every adapter's targeted (or full) suite on the head and
// folds them into one result: the worst outcome wins.
func (g *Gate) runSuites(ctx context.Context, dir string, change *Change, targeted bool, cfg config.Config) SuiteResult {
	var out SuiteResult
	out.Outcome = Pass
	start := time.Now()
	p := g.progress()
	for _, a := range g.Adapters {
		var targets []string
		if targeted {
			if !g.owns(a, change) {
				continue
			}
			ts, err := a.Targets(ctx, g.Runner, dir, change)
			if err != nil {
				return SuiteResult{Outcome: EnvError, Detail: fmt.Sprintf("%s: finding what the change reaches: %v", a.Language(), err), Duration: time.Since(start)}
			}
			if len(ts) == 0 {
				continue
			}
			targets = ts
			p.Step("running the %s tests of %d targets the change reaches", a.Language(), len(ts))
		} else {
			p.Step("running the full %s suite", a.Language())
		}
		timeout := cfg.Gate.SuiteTimeout.Duration
		res, err := a.RunSuite(ctx, g.Runner, dir, targets, timeout)
		if err != nil {
			res = SuiteResult{Outcome: EnvError, Detail: fmt.Sprintf("%s suite: %v", a.Language(), err)}
		}
		out.Targets = append(out.Targets, res.Targets...)
		out.Failed = append(out.Failed, res.Failed...)
		if res.Detail != "" {
			out.Detail = strings.TrimSpace(out.Detail + "\n" + res.Detail)
		}
		if severity(res.Outcome) > severity(out.Outcome) {
			out.Outcome = res.Outcome
		}
	}
	out.Duration = time.Since(start)
	return out
}

func severity(o Outcome) int {
	switch o {
	case Pass, Skip:
		return 0
	case NotRun:
		return 1
	case Fail, Flaky:
		return 2
	case Timeout:
		return 3
	case BuildError, ImportError, MissingSymbol:
		return 4
	case EnvError:
		return 5
	}
	return 2
}

func passed(s SuiteResult) bool { return s.Outcome == Pass || s.Outcome == Skip }

// judge turns one test's runs on each side into its report line.
func judge(t Test, base, head, control []TestResult) TestReport {
	b, h := summarize(base), summarize(head)
	tr := TestReport{
		Name: t.Name, Package: t.Package, File: t.File, Language: t.Language,
		BaseOutcome: b.Outcome, HeadOutcome: h.Outcome,
		BaseDetail: b.Detail, HeadDetail: h.Detail,
		BaseMS: ms(b.Duration), HeadMS: ms(h.Duration),
	}
	if len(control) > 0 {
		tr.ControlOutcome = summarize(control).Outcome
	}
	tr.Reason = creditReason(b.Outcome, h.Outcome, tr.ControlOutcome)
	tr.Credited = tr.Reason == ReasonCredited
	tr.ReasonText = reasonText[tr.Reason]
	return tr
}

// creditReason is the whole credit rule in one place. Head problems are
// named first: a test that fails with the change is the more useful news.
func creditReason(base, head, control Outcome) string {
	switch head {
	case Fail:
		return ReasonFailsOnHead
	case BuildError, ImportError, MissingSymbol:
		return ReasonNoBuildOnHead
	case Timeout:
		return ReasonTimeoutOnHead
	case EnvError:
		return ReasonEnvOnHead
	case Flaky:
		return ReasonFlaky
	case Skip:
		if base == Fail {
			return ReasonSkippedOnHead
		}
	case NotRun:
		return ReasonNotRunOnHead
	}
	switch base {
	case Pass:
		return ReasonPassesOnBase
	case BuildError:
		return ReasonNoBuildOnBase
	case ImportError:
		return ReasonImportOnBase
	case MissingSymbol:
		return ReasonMissingOnBase
	case Skip:
		return ReasonSkippedOnBase
	case Timeout:
		return ReasonTimeoutOnBase
	case EnvError:
		return ReasonEnvOnBase
	case NotRun:
		return ReasonNotRunOnBase
	case Flaky:
		return ReasonFlaky
	case Fail:
		if control != "" && control != Pass && control != NotRun {
			return ReasonBaseBroken
		}
		if head == Pass {
			return ReasonCredited
		}
		return ReasonSkippedOnHead
	}
	return ReasonNotRunOnBase
}

// summarize folds repeated runs of one test into one outcome: all runs agree,
// or the test is flaky (a pass mixed with a failure). Runs that disagree
// only in how they failed keep the most serious failure.
func summarize(runs []TestResult) TestResult {
	if len(runs) == 0 {
		return TestResult{Outcome: NotRun}
	}
	out := runs[0]
	var total time.Duration
	sawPass, sawFail := false, false
	for _, r := range runs {
		total += r.Duration
		switch r.Outcome {
		case Pass:
			sawPass = true
		case Fail, Timeout:
			sawFail = true
		}
		if severity(r.Outcome) > severity(out.Outcome) {
			d := out.Detail
			out = r
			if out.Detail == "" {
				out.Detail = d
			}
		}
	}
	out.Duration = total / time.Duration(len(runs))
	if sawPass && sawFail {
		out.Outcome = Flaky
		out.Detail = fmt.Sprintf("%d runs disagreed: %s", len(runs), firstLine(out.Detail))
	}
	return out
}

// existedOnBase reports whether t may have existed on the base, so that a
// control run of its base version means something. A test in a file the
// change adds, or whose name its base file never mentions, is new: running
// it on the untouched base would only find it missing (a new package does
// not even build there), which says nothing about the base being broken.
func existedOnBase(t Test, change *Change) bool {
	f, ok := change.File(t.File)
	if !ok || f.Status == Added || f.Base == nil {
		return false
	}
	name := t.Name
	if i := strings.Index(name, "/"); i >= 0 { // Go subtest: its top-level test
		name = name[:i]
	}
	if i := strings.LastIndex(name, "::"); i >= 0 { // pytest method: the method name
		name = name[i+2:]
	}
	return strings.Contains(string(f.Base), name)
}

func (g *Gate) progress() Progress {
	if g.Progress == nil {
		return NoProgress{}
	}
	return g.Progress
}

func (g *Gate) adapter(lang string) Adapter {
	for _, a := range g.Adapters {
		if a.Language() == lang {
			return a
		}
	}
	return nil
}

func (g *Gate) owns(a Adapter, change *Change) bool {
	for _, f := range change.Files {
		if a.Owns(f.Path) {
			return true
		}
	}
	return false
}

func (g *Gate) adaptersFor(change *Change) []Adapter {
	var out []Adapter
	for _, a := range g.Adapters {
		if g.owns(a, change) {
			out = append(out, a)
		}
	}
	return out
}

// testOverlay is what the head contributes to the "fail before" snapshot:
// its test files and test data, so that the new tests run against the old
// code. Code under test is never overlaid.
func (g *Gate) testOverlay(change *Change) []FileChange {
	var out []FileChange
	for _, f := range change.Files {
		if g.isTestSupport(f.Path) {
			out = append(out, f)
		}
	}
	return out
}

// testDataDirs are directory names whose non-code files belong to the tests.
var testDataDirs = map[string]bool{"testdata": true, "fixtures": true, "tests": true, "test": true}

func (g *Gate) isTestSupport(p string) bool {
	for _, a := range g.Adapters {
		if a.IsTestFile(p) {
			return true
		}
	}
	if path.Base(p) == "conftest.py" {
		return true
	}
	owned := false
	for _, a := range g.Adapters {
		owned = owned || a.Owns(p)
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if el == "testdata" || (!owned && testDataDirs[el]) {
			return true
		}
	}
	return false
}

func (g *Gate) errorReport(rep *Report, err error) *Report {
	rep.Verdict = Error
	rep.Reasons = append(rep.Reasons, Reason{Code: ReasonEnvironment, Message: err.Error()})
	if rep.Suite.Targeted.Outcome == "" {
		rep.Suite.Targeted = SuiteResult{Outcome: NotRun}
	}
	if rep.Suite.Full.Outcome == "" {
		rep.Suite.Full = SuiteResult{Outcome: NotRun}
	}
	return rep
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

func collect(m map[string][]TestResult, res []TestResult) {
	for _, r := range res {
		m[r.Test.ID()] = append(m[r.Test.ID()], r)
	}
}

func groupByLanguage(tests []Test) map[string][]Test {
	m := map[string][]Test{}
	for _, t := range tests {
		m[t.Language] = append(m[t.Language], t)
	}
	return m
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Path != fs[j].Path {
			return fs[i].Path < fs[j].Path
		}
		if fs[i].Line != fs[j].Line {
			return fs[i].Line < fs[j].Line
		}
		return fs[i].Code < fs[j].Code
	})
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// ErrNoAdapters is returned when a gate is built without languages.
var ErrNoAdapters = errors.New("no language adapters configured")
