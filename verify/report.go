package verify

import "time"

// Verdict is the gate's answer for a change.
type Verdict string

const (
	// Verified: at least one new or modified test fails on the base by
	// assertion and passes with the change, the suites pass, and nothing was
	// tampered with.
	Verified Verdict = "verified"
	// Green: the suites pass, but no test earned credit.
	Green Verdict = "green"
	// Failed: a test or a suite fails on the head.
	Failed Verdict = "failed"
	// Tampered: the change weakens the tests or touches what it must not.
	Tampered Verdict = "tampered"
	// Error: the gate could not decide (not a repository, bad revision,
	// toolchain missing, broken configuration).
	Error Verdict = "error"
)

// Reason codes say, as data, why a test earned credit or not, and why a
// verdict is what it is. Every surface (CLI table, JSON, LSP diagnostics,
// editor panel) shows the same codes with the same sentences.
const (
	ReasonCredited        = "credited"
	ReasonPassesOnBase    = "passes_on_base"
	ReasonNoBuildOnBase   = "does_not_build_on_base"
	ReasonImportOnBase    = "does_not_import_on_base"
	ReasonMissingOnBase   = "missing_symbol_on_base"
	ReasonSkippedOnBase   = "skipped_on_base"
	ReasonTimeoutOnBase   = "timed_out_on_base"
	ReasonEnvOnBase       = "environment_error_on_base"
	ReasonNotRunOnBase    = "not_run_on_base"
	ReasonBaseBroken      = "base_already_broken"
	ReasonFlaky           = "flaky"
	ReasonFailsOnHead     = "fails_on_head"
	ReasonSkippedOnHead   = "skipped_on_head"
	ReasonNoBuildOnHead   = "does_not_build_on_head"
	ReasonTimeoutOnHead   = "timed_out_on_head"
	ReasonNotRunOnHead    = "not_run_on_head"
	ReasonEnvOnHead       = "environment_error_on_head"
	ReasonNoTestsChanged  = "no_tests_changed"
	ReasonNoChange        = "no_change"
	ReasonTargetedFailed  = "targeted_suite_failed"
	ReasonFullFailed      = "full_suite_failed"
	ReasonTamper          = "tamper"
	ReasonConfig          = "bad_config"
	ReasonEnvironment     = "environment"
	ReasonNothingCredited = "nothing_credited"
	ReasonMutantsSurvive  = "mutants_survive"
	ReasonNoKill          = "credited_tests_kill_no_mutant"
	// ReasonPassToPass: a test ID that passed on the untouched base fails
	// (or does not build) on the head.
	ReasonPassToPass = "pass_to_pass_failed"
	// ReasonChangedExpectations: the base's version of a test fails against
	// the head and the base's config does not allow it.
	ReasonChangedExpectations = "changed_expectations"
	// ReasonCannotRun: tests that cannot be collected or built on either
	// side: the environment, not the change, is broken.
	ReasonCannotRun = "cannot_run_either_side"
	// ReasonRefusedRead: the confined reader refused a file the gate had
	// to read (FindingRefusedRead); the verdict is tampered.
	ReasonRefusedRead = "refused_read"
	// ReasonUnsupported: the change is code in languages bcode has no
	// adapter for (Report.Unsupported names the files); nothing of it
	// was run, so the gate cannot say anything for it.
	ReasonUnsupported = "unsupported"
)

// Reason is one reason code with the sentence a person reads.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TestReport is one new or modified test and what it earned.
type TestReport struct {
	Name     string `json:"name"`
	Package  string `json:"package"`
	File     string `json:"file"`
	Language string `json:"language"`
	// BaseOutcome is the outcome on the base with the head's test files laid
	// over it; HeadOutcome on the head. Flaky when repeated runs disagreed.
	BaseOutcome Outcome `json:"base_outcome"`
	HeadOutcome Outcome `json:"head_outcome"`
	// ControlOutcome is the base's own version of a modified test on the
	// untouched base, run only when the new version failed there.
	ControlOutcome Outcome `json:"control_outcome,omitempty"`
	Credited       bool    `json:"credited"`
	Reason         string  `json:"reason"`
	ReasonText     string  `json:"reason_text"`
	BaseDetail     string  `json:"base_detail,omitempty"`
	HeadDetail     string  `json:"head_detail,omitempty"`
	BaseMS         int64   `json:"base_ms"`
	HeadMS         int64   `json:"head_ms"`
	// Changed is set when the diff itself adds or modifies this test (the
	// static hint); credit never depends on it.
	Changed bool `json:"changed,omitempty"`
	// Runs is how many times the test ran on each side (repeats only for
	// fail-to-pass candidates, each in its own process).
	Runs int `json:"runs,omitempty"`
	// Oracle is set for a test of the task's pinned oracle (Gate.Oracle).
	Oracle bool `json:"oracle,omitempty"`
}

// PassToPass is the run-time check that every test ID passing on the
// untouched base still passes on the head.
type PassToPass struct {
	// Checked is how many test IDs passed on the untouched base.
	Checked int `json:"checked"`
	// Failed names those that fail, or do not build, on the head.
	Failed []string `json:"failed,omitempty"`
	// Vanished names those skipped, xfailed, deselected, not collected or
	// not run on the head (each is also a test_vanished finding).
	Vanished []string `json:"vanished,omitempty"`
	// PreExisting names test IDs that fail on both sides: not the
	// change's doing, and not counted against it.
	PreExisting []string `json:"pre_existing,omitempty"`
}

// SuiteReport holds the targeted and full suite runs on the head.
type SuiteReport struct {
	Targeted SuiteResult `json:"targeted"`
	Full     SuiteResult `json:"full"`
}

// Report is the gate's whole answer. Its JSON form is `bcode check --json`.
type Report struct {
	Verdict Verdict          `json:"verdict"`
	Reasons []Reason         `json:"reasons"`
	Repo    string           `json:"repo,omitempty"`
	Base    string           `json:"base"`
	Head    string           `json:"head"`
	Files   int              `json:"files_changed"`
	Tests   []TestReport     `json:"tests"`
	Tamper  []Finding        `json:"tamper"`
	Suite   SuiteReport      `json:"suite"`
	Mutants *MutationSummary `json:"mutants,omitempty"`
	// PassToPass is the pass-to-pass check over the full suites of both
	// sides; nil when the suites did not run.
	PassToPass *PassToPass `json:"pass_to_pass,omitempty"`
	// ChangedExpectations lists the base's tests that fail against the
	// head (old tests on new code), blocking or not.
	ChangedExpectations []Finding `json:"changed_expectations,omitempty"`
	// Unsupported names the changed files in languages bcode has no
	// adapter for (JavaScript, Rust, ...): no test of them ran. When they
	// are all the change has, the verdict is error (unsupported); beside
	// Go or Python code they stand beside the verdict for the rest.
	Unsupported []Finding `json:"unsupported,omitempty"`
	// Notes say what the run could not provide that its tests may have
	// needed (a project's packages that could not be installed): facts
	// beside the verdict, never a cause of it.
	Notes []string `json:"notes,omitempty"`
	// BaseReused is set when the untouched base's suite did not run: its
	// results were read from an earlier run with the same key (also said
	// in Notes).
	BaseReused *BaseReuse `json:"base_reused,omitempty"`
	// BeforeReused is set when the base with the head's tests did not
	// run: its run and repeats were read from an earlier check's with the
	// same base, tests, toolchain, environment and config (beforereuse.go).
	BeforeReused *BaseReuse `json:"before_reused,omitempty"`
	// Infrastructure names the change's CI definitions (workflows,
	// .travis.yml, .circleci/) when the base's config lets them stand
	// beside the verdict rather than block it (a person's change, unless
	// gate.infrastructure_changes says otherwise): the verdict is what
	// the tests established.
	Infrastructure []Finding `json:"infrastructure,omitempty"`
	// Candidates is how many test IDs were candidates for credit (every
	// test of the test files and support the change touches); Tests lists
	// the informative ones.
	Candidates int `json:"candidates"`
	// Level is the verification level the change reached, LevelRequired
	// the one the base's verify.level asks for, LevelMissing what the
	// next level up lacks (level.go).
	Level         Level  `json:"level"`
	LevelRequired Level  `json:"level_required"`
	LevelMissing  string `json:"level_missing,omitempty"`
	// Oracle names the task's pinned oracle tests by ID, when it has one.
	Oracle     []string         `json:"oracle,omitempty"`
	Runner     string           `json:"runner"`
	Timings    map[string]int64 `json:"timings_ms"`
	DurationMS int64            `json:"duration_ms"`
}

// MutationSummary is the evidence part of a check: each mutant with its
// verdict, and whether the credited tests kill at least one of them.
type MutationSummary struct {
	Mutants []Mutant `json:"mutants"`
	// CreditedKills is how many mutants a credited test killed.
	CreditedKills int    `json:"credited_kills"`
	Survived      int    `json:"survived"`
	Note          string `json:"note,omitempty"`
}

// Credited returns the tests that earned credit.
func (r *Report) Credited() []TestReport {
	var out []TestReport
	for _, t := range r.Tests {
		if t.Credited {
			out = append(out, t)
		}
	}
	return out
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
