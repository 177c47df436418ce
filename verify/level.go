package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/config"
)

// Level is how much a change has shown by what ran, weakest first:
//
//	V1  the oracle tests (or, without one, the credited tests) flip from
//	    fail on the base to pass on the head, every flake run agreeing
//	V2  V1, and no test that passed on the base fails on the head
//	V3  V2, and the head's whole suite passes
//
// `verified` needs the level the base's verify.level asks for.
type Level string

const (
	LevelNone Level = "none"
	LevelV1   Level = config.LevelV1
	LevelV2   Level = config.LevelV2
	LevelV3   Level = config.LevelV3
)

// ReasonLevelNotReached: the change reached a lower level than the base's
// verify.level asks for.
const ReasonLevelNotReached = "level_not_reached"

func init() {
	reasonText[ReasonLevelNotReached] = "the change does not reach the verification level the base's verify.level asks for"
}

// rank orders levels; an unknown one ranks as none.
func (l Level) rank() int {
	switch l {
	case LevelV1:
		return 1
	case LevelV2:
		return 2
	case LevelV3:
		return 3
	}
	return 0
}

// requiredLevel is the level cfg asks for (V2 when unset).
func requiredLevel(cfg config.Config) Level {
	if cfg.Verify.Level == "" {
		return config.DefaultLevel
	}
	return Level(cfg.Verify.Level)
}

// levelFacts are what the level weighs besides the report: the head's
// whole suite, as it ran.
type levelFacts struct {
	// headFailing names every test ID and unit that did not pass (or
	// skip) on the head, pre-existing failures included.
	headFailing []string
	// partial is set when the head's run was not the whole suite
	// (gate.skip_full_suite).
	partial bool
}

// levelOf is the one computation of a report's level: the highest level
// reached, and what the next one up lacks ("" at V3). A tampered change,
// or one the gate could not judge, reaches none.
func levelOf(rep *Report, facts levelFacts) (Level, string) {
	switch rep.Verdict {
	case Tampered, Error, "":
		return LevelNone, fmt.Sprintf("V1: the verdict is %s", rep.Verdict)
	}
	if missing := missingV1(rep); missing != "" {
		return LevelNone, "V1: " + missing
	}
	if missing := missingV2(rep); missing != "" {
		return LevelV1, "V2: " + missing
	}
	switch {
	case facts.partial:
		return LevelV2, "V3: the head's whole suite did not run (gate.skip_full_suite)"
	case len(facts.headFailing) > 0:
		return LevelV2, fmt.Sprintf("V3: %d test(s) or unit(s) do not pass on the head: %s", len(facts.headFailing), listSome(facts.headFailing))
	}
	return LevelV3, ""
}

// missingV1 says why V1 is not reached: with an oracle, every oracle test
// must flip; without, at least one test must earn credit.
func missingV1(rep *Report) string {
	if len(rep.Oracle) == 0 {
		if len(rep.Credited()) == 0 {
			return "no test fails on the base and passes with the change"
		}
		return ""
	}
	flipped := map[string]bool{}
	for _, t := range rep.Tests {
		if t.Oracle && t.Credited {
			flipped[testReportID(t)] = true
		}
	}
	var stuck []string
	for _, id := range rep.Oracle {
		if !flipped[id] {
			stuck = append(stuck, id)
		}
	}
	if len(stuck) > 0 {
		return fmt.Sprintf("oracle test(s) that do not flip from fail to pass in every run: %s", listSome(stuck))
	}
	return ""
}

// missingV2 says which tests that passed on the base do not on the head.
func missingV2(rep *Report) string {
	var broken []string
	if p := rep.PassToPass; p != nil {
		broken = append(broken, p.Failed...)
	}
	if rep.Suite.Full.Outcome == BuildError {
		broken = append(broken, rep.Suite.Full.Failed...)
	}
	for _, t := range rep.Tests {
		if t.Reason == ReasonFailsOnHead || t.Reason == ReasonNoBuildOnHead || t.Reason == ReasonTimeoutOnHead {
			if t.BaseOutcome == Pass {
				broken = append(broken, displayName(Test{Language: t.Language, Package: t.Package, Name: t.Name}))
			}
		}
	}
	if rep.PassToPass == nil {
		return "the pass-to-pass check did not run"
	}
	if len(broken) > 0 {
		return fmt.Sprintf("pass-to-pass regressions: %s", listSome(dedupe(broken)))
	}
	return ""
}

// settleLevel gives the report its level and holds the verdict to the
// level the base asks for: a verified change below it is green, saying
// what it reached and what is missing; with V1 asked, a change whose
// only failures are pass-to-pass regressions is verified at V1, and the
// regressions are named.
func settleLevel(rep *Report, cfg config.Config, facts levelFacts) {
	rep.Level, rep.LevelMissing = levelOf(rep, facts)
	rep.LevelRequired = requiredLevel(cfg)
	reached := rep.Level.rank() >= rep.LevelRequired.rank()
	switch {
	case rep.Verdict == Verified && !reached:
		rep.Verdict = Green
		rep.Reasons = []Reason{{ReasonLevelNotReached, fmt.Sprintf("reached %s, the base's verify.level asks for %s; missing for %s", rep.Level, rep.LevelRequired, rep.LevelMissing)}}
	case rep.Verdict == Failed && reached && rep.Level == LevelV1 && onlyRegressions(rep):
		// The regressions are what V1 lets through, nothing else: the rest
		// of the verdict is decided as it would be without them (a rewritten
		// expectation, mutants no credited test kills).
		rep.Reasons = nil
		if len(rep.ChangedExpectations) > 0 && cfg.Gate.AllowChangedExpectations == nil {
			decideRewritten(rep)
		} else {
			decideVerified(rep, cfg)
		}
		if rep.Verdict == Verified {
			rep.Reasons = []Reason{{ReasonCredited, "verified at V1 (the base's verify.level): the oracle or credited tests flip from fail to pass"}}
		}
		rep.Reasons = append(rep.Reasons, Reason{ReasonPassToPass, "not V2: " + strings.TrimPrefix(rep.LevelMissing, "V2: ")})
	}
}

// level is the check run's step that settles the level, from the head's
// whole run.
func (r *checkRun) level() {
	facts := levelFacts{partial: r.fullTargets != nil}
	if r.head != nil {
		for _, id := range r.head.order {
			if res := r.head.results[id]; res.Outcome != Pass && res.Outcome != Skip {
				facts.headFailing = append(facts.headFailing, displayName(res.Test))
			}
		}
		for _, k := range sortedUnitKeys(r.head.units) {
			if u := r.head.units[k]; u.Outcome != Pass {
				facts.headFailing = append(facts.headFailing, fmt.Sprintf("%s (%s)", u.Unit, u.Outcome))
			}
		}
	}
	settleLevel(r.rep, r.cfg, facts)
}

// onlyRegressions reports whether every test that fails on the head
// passed on the base: what V1 lets through. A new test failing on the
// head, or one that did not build before, is still a failure.
func onlyRegressions(rep *Report) bool {
	for _, t := range rep.Tests {
		switch t.HeadOutcome {
		case Fail, BuildError, ImportError, MissingSymbol, Timeout:
			if t.BaseOutcome != Pass {
				return false
			}
		}
	}
	return true
}

func testReportID(t TestReport) string {
	return Test{Language: t.Language, Package: t.Package, Name: t.Name}.ID()
}

// listSome is up to five names and how many more.
func listSome(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedUnitKeys(m map[string]UnitResult) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
