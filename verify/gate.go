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

// EvidenceStart begins mutation evidence on the head snapshot before the
// gate knows which tests it credits: the work that runs no test (listing,
// type checks, builds) goes on beside the gate's own test runs. The
// function it returns finishes the evidence with the credited tests, or,
// given nil, abandons it.
type EvidenceStart func(ctx context.Context, r sandbox.Runner, headDir string, change *Change) (finish func(credited []Test) (*MutationSummary, error))

// Gate decides whether a change is verified.
type Gate struct {
	Runner   sandbox.Runner
	Adapters []Adapter
	Checks   []Check
	Evidence Evidence // optional
	// EvidenceStart, when set, is used instead of Evidence.
	EvidenceStart EvidenceStart
	Progress      Progress
	// AgentTask is set when the change is an agent's: then, unless the
	// base's config says otherwise, a change that rewrites what an existing
	// test pinned is never verified.
	AgentTask bool
	// Oracle is a task's pinned oracle: tests that failed on the base
	// when the task was made. They are candidates whatever the change
	// touches, and V1 needs every one to flip (oracle.go).
	Oracle []Test
	// BaseResults, when set, keeps the untouched base's whole-suite runs
	// and gives them back to later checks on the same base, toolchains,
	// environment and settings (basereuse.go); nil runs the base each time.
	BaseResults BaseResults
}

// reasonText is the sentence for every reason code.
var reasonText = map[string]string{
	ReasonCredited:            "fails on the base by assertion and passes with the change",
	ReasonPassesOnBase:        "already passes on the base: it does not show the change does anything",
	ReasonNoBuildOnBase:       "does not build on the base (it uses code the change adds): no evidence of a fix",
	ReasonImportOnBase:        "does not import on the base (it uses code the change adds): no evidence of a fix",
	ReasonMissingOnBase:       "fails on the base only because a name the change adds is missing",
	ReasonSkippedOnBase:       "is skipped when the change's tests run on the base: a skipped test shows nothing",
	ReasonTimeoutOnBase:       "timed out on the base",
	ReasonEnvOnBase:           "could not run on the base (environment error)",
	ReasonNotRunOnBase:        "produced no result on the base",
	ReasonBaseBroken:          "the base's own version of this test already fails on the base",
	ReasonFlaky:               "repeated runs disagreed",
	ReasonFailsOnHead:         "fails with the change",
	ReasonSkippedOnHead:       "is skipped with the change",
	ReasonNoBuildOnHead:       "does not build with the change",
	ReasonTimeoutOnHead:       "timed out with the change",
	ReasonNotRunOnHead:        "produced no result with the change",
	ReasonEnvOnHead:           "could not run with the change (environment error)",
	ReasonNoTestsChanged:      "the change adds or modifies no test",
	ReasonNoChange:            "base and head are the same commit (or the same tree): there is nothing to check; pass --base REV to compare with an earlier commit, or change something first",
	ReasonTargetedFailed:      "the tests of the packages the change reaches fail",
	ReasonFullFailed:          "the full suite fails",
	ReasonTamper:              "the change weakens the tests or touches protected paths",
	ReasonRefusedRead:         "a file the gate had to read is a link, a device, fifo, socket or directory, leads out of its directory, or is over its size cap",
	ReasonNothingCredited:     "no new or modified test fails on the base and passes with the change",
	ReasonMutantsSurvive:      "more mutants survive than evidence.max_survivors allows",
	ReasonNoKill:              "the changed code has mutants, but no credited test kills any of them",
	ReasonPassToPass:          "tests that passed on the base fail with the change",
	ReasonChangedExpectations: "the base's version of a test fails against the change: the change rewrote what the test pinned",
	ReasonCannotRun:           "tests cannot be built or imported on either side",
	ReasonUnsupported:         "the change is code in a language bcode has no adapter for: none of its tests ran",
}

// ReasonText returns the sentence for a reason code.
func ReasonText(code string) string { return reasonText[code] }

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

// testDataDirs are directory names whose non-code files belong to the tests.
var testDataDirs = map[string]bool{"testdata": true, "fixtures": true, "tests": true, "test": true}

func (g *Gate) isTestFile(p string) bool {
	for _, a := range g.Adapters {
		if a.IsTestFile(p) {
			return true
		}
	}
	return false
}

// isTestSupport reports whether p is a test file or something only tests
// use (conftest.py, testdata).
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
	if f, ok := refusedFinding(err); ok {
		// The tree's doing, not the environment's: a finding.
		rep.Tamper = append(rep.Tamper, f)
		rep.Verdict = Tampered
		rep.Reasons = append(rep.Reasons, Reason{Code: ReasonRefusedRead, Message: fmt.Sprintf("%s: %s", f.Path, f.Message)})
	} else {
		rep.Verdict = Error
		rep.Reasons = append(rep.Reasons, Reason{Code: ReasonEnvironment, Message: err.Error()})
	}
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

// refusedFinding turns a confined reader's refusal anywhere in err's chain
// into the finding that reports it, decided by the error's type, never its
// text.
func refusedFinding(err error) (Finding, bool) {
	r, ok := sandbox.Refused(err)
	if !ok {
		return Finding{}, false
	}
	msg := "refused to read it: " + r.Err.Error()
	if r.Detail != "" {
		msg += ": " + r.Detail
	}
	return Finding{Code: FindingRefusedRead, Path: r.Path, Message: msg}, true
}

// helpersOnly reports whether f, a changed test file, declares no test on
// either side (verify.TestDeclarer): helpers the other tests call, which
// the gate treats as test support.
func (g *Gate) helpersOnly(f FileChange) bool {
	for _, a := range g.Adapters {
		d, ok := a.(TestDeclarer)
		if !ok || !a.IsTestFile(f.Path) {
			continue
		}
		return f.Base != nil && f.Head != nil && !d.DeclaresTests(f.Path, f.Base) && !d.DeclaresTests(f.Path, f.Head)
	}
	return false
}
