// Package adaptertest is the conformance suite every language adapter
// (verify.Adapter) passes, as sandbox/runnertest is for runners: one set of
// behaviours — identity, the tests a change adds or modifies, the outcomes
// of real test runs, timeouts and cancellation, suite runs, targets,
// tampering and candidates — asserted through the Adapter interface alone
// against small fixtures written in the adapter's language.
//
// The suite knows nothing of a language. A language's test describes it
// with a Language (the adapter, a runner, fixture file maps and the tests
// they hold) and calls Run:
//
//	adaptertest.Run(t, adaptertest.Language{Adapter: golang.New(), Runner: r, ...})
//
// Fixtures are committed into real git repositories (internal/testrepo) and
// the change between two commits is loaded by verify/gitchange, as the gate
// loads it.
package adaptertest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
)

// Language describes one language to the suite.
type Language struct {
	// Adapter is the adapter under test.
	Adapter verify.Adapter
	// Runner runs the adapter's commands (sandbox/host in the adapters'
	// own tests).
	Runner sandbox.Runner
	// Require skips (or, under BCODE_REQUIRE_ALL=1, fails) the test when
	// the language's toolchain is missing.
	Require func(t *testing.T)
	// Foreign is the path of a file of another language: the adapter does
	// not own it, and a repository holding only it and a README has no
	// tests of this language.
	Foreign string
	// Outcomes is a repository whose tests end every way a test ends.
	Outcomes Outcomes
	// Change is a repository with two commits whose change touches tests
	// every way the gate cares about.
	Change Change
	// Suite holds whole repositories for RunSuite.
	Suite Suite
	// Departures names cases (as Run names them: "ChangedTests",
	// "RunTestsOutcomes", …) this adapter is known to fail, each with the
	// reason. A departing case is skipped with its reason, so the gap stays
	// visible in the test log until the adapter is fixed and the entry
	// deleted.
	Departures map[string]string
}

// Outcomes is one snapshot whose tests end every way a test ends. Every
// test is named as the adapter names it (verify.Test, ID by Language,
// Package and Name).
type Outcomes struct {
	Files map[string]string
	// Pass passes; Fail fails an assertion whose text holds FailText;
	// Panic panics or raises in the code under test with a message holding
	// PanicText; Skip skips itself.
	Pass, Fail, Panic, Skip verify.Test
	FailText, PanicText     string
	// Param is a parameterised test (Go subtests, pytest parametrize) and
	// ParamPass and ParamFail two of its rows, each reported by its own ID
	// in RunSuite's Results.
	Param, ParamPass, ParamFail verify.Test
	// RowsFold says RunTests answers for a parameterised test as a whole
	// (the function, as ChangedTests lists it), folding its rows into one
	// result: then the suite asks RunTests for Param, which fails, instead
	// of each row. pytest's adapter folds; Go's runs a subtest by its name.
	RowsFold bool
	// Unit is the unit holding Pass, Fail, Skip and Param, in the form
	// RunSuite accepts as a target.
	Unit string
	// Missing names a test no file defines: NotRun.
	Missing verify.Test
	// Broken is a test in a unit that does not build or import; it ends
	// BrokenOutcome (verify.BuildError for Go, verify.ImportError for
	// Python), with BrokenText in its detail.
	Broken        verify.Test
	BrokenOutcome verify.Outcome
	BrokenText    string
	// Slow sleeps far longer than any timeout the suite sets, in a unit of
	// its own.
	Slow verify.Test
}

// Change is a repository of two commits: Base, then Head written over it
// (a path mapped to "" is removed).
type Change struct {
	Base, Head map[string]string
	// Added is a test in a test file the change adds; Modified a test whose
	// body the change alters. ChangedTests lists both.
	Added, Modified verify.Test
	// Moved is a test the change only moves within its file (its lines
	// shift, its syntax does not change); Unchanged a test the change
	// leaves alone in a changed file. ChangedTests lists neither.
	Moved, Unchanged verify.Test
	// Deleted is a test the change deletes from a file it keeps; Skipped
	// one the change newly skips. ChangedTests does not list Deleted; Tamper
	// reports both, at their files.
	Deleted, Skipped verify.Test
	// Untouched are test files (on both sides) that Tamper reports nothing
	// about: files the change does not alter, or alters without deleting
	// or skipping a test.
	Untouched []string
	// Source is a changed file of code (not tests) that Target, a target in
	// RunSuite's form, exercises: Targets includes Target.
	Source, Target string
	// Support is a changed file that only tests use (Candidates.Support),
	// and Unit the unit holding Modified, in Candidates.Units' form.
	Support, Unit string
}

// Suite holds the repositories RunSuite runs whole.
type Suite struct {
	// Passing is a repository whose tests all pass; Failing one where at
	// least one test fails by assertion.
	Passing, Failing map[string]string
}

// slack is how long a run may take beyond the timeout it was given: a
// toolchain's start and a process tree's teardown on a loaded machine.
const slack = 45 * time.Second

// Run runs the conformance suite against lang.
func Run(t *testing.T, lang Language) {
	if lang.Adapter == nil || lang.Runner == nil {
		t.Fatal("adaptertest: Language.Adapter and Language.Runner are required")
	}
	if lang.Require != nil {
		lang.Require(t)
	}
	s := &suite{lang: lang}
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Identity", s.identity},
		{"ChangedTests", s.changedTests},
		{"RunTestsOutcomes", s.runTestsOutcomes},
		{"RunTestsCount", s.runTestsCount},
		{"RunTestsTimeout", s.runTestsTimeout},
		{"RunTestsCancel", s.runTestsCancel},
		{"Suite", s.suite},
		{"SuiteResults", s.suiteResults},
		{"SuiteWithoutTests", s.suiteWithoutTests},
		{"Targets", s.targets},
		{"Tamper", s.tamper},
		{"Candidates", s.candidates},
	} {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := lang.Departures[c.name]; ok {
				t.Skipf("known departure of the %s adapter: %s", lang.Adapter.Language(), why)
			}
			t.Parallel()
			c.fn(t)
		})
	}
}

type suite struct {
	lang Language
}

func (s *suite) adapter() verify.Adapter { return s.lang.Adapter }

// repo commits files into a fresh repository and returns its directory.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	return testrepo.FromFiles(t, files).Dir
}

// loadChange commits the Change fixture's two sides and loads the change
// between them as the gate does; the workspace is closed with the test.
func (s *suite) loadChange(t *testing.T) *verify.Change {
	t.Helper()
	r := testrepo.FromFiles(t, s.lang.Change.Base)
	for p, content := range s.lang.Change.Head {
		if content == "" {
			if err := os.Remove(filepath.Join(r.Dir, filepath.FromSlash(p))); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r.WriteFile(p, content)
	}
	r.Commit("head")
	g, err := git.Open(t.Context(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	change, err := gitchange.Load(t.Context(), g, "HEAD~1", "HEAD")
	if err != nil {
		t.Fatalf("gitchange.Load: %v", err)
	}
	t.Cleanup(func() { _ = change.Workspace.Close() })
	return change
}

// head lays out the change's head as the gate does before Targets and
// Candidates.
func head(t *testing.T, change *verify.Change) string {
	t.Helper()
	dir, err := change.Workspace.Materialize(t.Context(), verify.HeadSide, nil)
	if err != nil {
		t.Fatalf("Materialize head: %v", err)
	}
	return dir
}

func (s *suite) identity(t *testing.T) {
	a := s.adapter()
	if a.Language() == "" {
		t.Fatal("Language() is empty")
	}
	o, c := s.lang.Outcomes, s.lang.Change
	for _, tc := range []verify.Test{o.Pass, o.Fail, o.Panic, o.Skip, o.Param, o.Broken, o.Slow, c.Added, c.Modified, c.Moved, c.Deleted, c.Skipped} {
		if tc.Language != a.Language() {
			t.Errorf("fixture test %s: Language %q, the adapter says %q", tc.Name, tc.Language, a.Language())
		}
		if !a.Owns(tc.File) || !a.IsTestFile(tc.File) {
			t.Errorf("%s (a test file): Owns=%v IsTestFile=%v, want both true", tc.File, a.Owns(tc.File), a.IsTestFile(tc.File))
		}
	}
	for _, p := range s.fixturePaths() {
		if a.IsTestFile(p) && !a.Owns(p) {
			t.Errorf("%s: a test file the adapter does not own", p)
		}
	}
	if !a.Owns(c.Source) || a.IsTestFile(c.Source) {
		t.Errorf("%s (code): Owns=%v IsTestFile=%v, want true, false", c.Source, a.Owns(c.Source), a.IsTestFile(c.Source))
	}
	if f := s.lang.Foreign; f == "" || a.Owns(f) || a.IsTestFile(f) {
		t.Errorf("foreign file %q: Owns=%v IsTestFile=%v, want a path of another language, neither owned nor a test", f, a.Owns(f), a.IsTestFile(f))
	}
}

// fixturePaths are the paths of every fixture file.
func (s *suite) fixturePaths() []string {
	var out []string
	for _, files := range []map[string]string{s.lang.Outcomes.Files, s.lang.Change.Base, s.lang.Change.Head, s.lang.Suite.Passing, s.lang.Suite.Failing} {
		for p := range files {
			out = append(out, p)
		}
	}
	return out
}

func (s *suite) changedTests(t *testing.T) {
	change := s.loadChange(t)
	got, err := s.adapter().ChangedTests(t.Context(), change)
	if err != nil {
		t.Fatalf("ChangedTests: %v", err)
	}
	ids := map[string]bool{}
	for _, tc := range got {
		ids[tc.ID()] = true
		if tc.Language != s.adapter().Language() {
			t.Errorf("ChangedTests listed %s with Language %q", tc.ID(), tc.Language)
		}
	}
	c := s.lang.Change
	for _, want := range []verify.Test{c.Added, c.Modified} {
		if !ids[want.ID()] {
			t.Errorf("ChangedTests lacks %s; got %v", want.ID(), testIDs(got))
		}
	}
	for _, not := range []struct {
		why string
		tc  verify.Test
	}{{"only moved", c.Moved}, {"unchanged", c.Unchanged}, {"deleted", c.Deleted}} {
		if ids[not.tc.ID()] {
			t.Errorf("ChangedTests lists %s, which the change %s", not.tc.ID(), not.why)
		}
	}
}

func testIDs(ts []verify.Test) []string {
	out := make([]string, len(ts))
	for i, tc := range ts {
		out[i] = tc.ID()
	}
	return out
}

// outcomeCase is one test of the Outcomes fixture and how it must end.
type outcomeCase struct {
	test    verify.Test
	outcome verify.Outcome
	text    string // in Detail, when set
}

func (s *suite) outcomeCases() []outcomeCase {
	o := s.lang.Outcomes
	cases := []outcomeCase{
		{o.Pass, verify.Pass, ""},
		{o.Fail, verify.Fail, o.FailText},
		{o.Panic, verify.Fail, o.PanicText},
		{o.Skip, verify.Skip, ""},
		{o.Missing, verify.NotRun, ""},
		{o.Broken, o.BrokenOutcome, o.BrokenText},
	}
	if o.RowsFold {
		return append(cases, outcomeCase{o.Param, verify.Fail, ""})
	}
	return append(cases, outcomeCase{o.ParamPass, verify.Pass, ""}, outcomeCase{o.ParamFail, verify.Fail, ""})
}

// runOutcomes runs every outcome case count times and checks each result.
func (s *suite) runOutcomes(t *testing.T, count int) {
	dir := repo(t, s.lang.Outcomes.Files)
	cases := s.outcomeCases()
	tests := make([]verify.Test, len(cases))
	for i, c := range cases {
		tests[i] = c.test
	}
	res, err := s.adapter().RunTests(t.Context(), s.lang.Runner, dir, tests, verify.RunOptions{Count: count, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("RunTests: %v", err)
	}
	if len(res) != len(tests)*count {
		t.Errorf("%d results for %d tests × %d, want one per test and round", len(res), len(tests), count)
	}
	byID := map[string][]verify.TestResult{}
	for _, r := range res {
		byID[r.Test.ID()] = append(byID[r.Test.ID()], r)
	}
	for _, c := range cases {
		rs := byID[c.test.ID()]
		if len(rs) != count {
			t.Errorf("%s: %d results, want %d", c.test.ID(), len(rs), count)
		}
		for _, r := range rs {
			if r.Outcome != c.outcome {
				t.Errorf("%s: %s (%q), want %s", c.test.ID(), r.Outcome, r.Detail, c.outcome)
			} else if c.text != "" && !strings.Contains(r.Detail, c.text) {
				t.Errorf("%s: detail %q lacks %q", c.test.ID(), r.Detail, c.text)
			}
		}
	}
}

func (s *suite) runTestsOutcomes(t *testing.T) { s.runOutcomes(t, 1) }

func (s *suite) runTestsCount(t *testing.T) { s.runOutcomes(t, 3) }

func (s *suite) runTestsTimeout(t *testing.T) {
	dir := repo(t, s.lang.Outcomes.Files)
	const timeout = 3 * time.Second
	start := time.Now()
	res, err := s.adapter().RunTests(t.Context(), s.lang.Runner, dir, []verify.Test{s.lang.Outcomes.Slow}, verify.RunOptions{Count: 1, Timeout: timeout})
	if el := time.Since(start); el > timeout+slack {
		t.Errorf("RunTests with a %s timeout returned after %s", timeout, el)
	}
	if err != nil {
		t.Fatalf("RunTests: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results for one test, want 1: %+v", len(res), res)
	}
	if res[0].Outcome == verify.Pass {
		t.Errorf("%s slept past its timeout and passed", res[0].Test.ID())
	}
}

func (s *suite) runTestsCancel(t *testing.T) {
	dir := repo(t, s.lang.Outcomes.Files)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(2*time.Second, cancel)
	start := time.Now()
	res, err := s.adapter().RunTests(ctx, s.lang.Runner, dir, []verify.Test{s.lang.Outcomes.Slow}, verify.RunOptions{Count: 1, Timeout: 10 * time.Minute})
	if el := time.Since(start); el > slack {
		t.Errorf("RunTests returned %s after the start, though its context was cancelled after 2s", el)
	}
	if err != nil {
		return // a cancelled run may say so
	}
	for _, r := range res {
		if r.Outcome == verify.Pass {
			t.Errorf("%s passed, though its run was cancelled", r.Test.ID())
		}
	}
}

func (s *suite) runSuite(t *testing.T, files map[string]string) verify.SuiteResult {
	t.Helper()
	res, err := s.adapter().RunSuite(t.Context(), s.lang.Runner, repo(t, files), nil, 5*time.Minute)
	if err != nil {
		t.Fatalf("RunSuite: %v", err)
	}
	return res
}

func (s *suite) suite(t *testing.T) {
	if res := s.runSuite(t, s.lang.Suite.Passing); res.Outcome != verify.Pass || len(res.Failed) > 0 {
		t.Errorf("passing suite: %s, failed %v (%q), want pass", res.Outcome, res.Failed, res.Detail)
	}
	res := s.runSuite(t, s.lang.Suite.Failing)
	if res.Outcome != verify.Fail || len(res.Failed) == 0 {
		t.Errorf("failing suite: %s, failed %v (%q), want fail naming what failed", res.Outcome, res.Failed, res.Detail)
	}
	if !slices.ContainsFunc(res.Results, func(r verify.TestResult) bool { return r.Outcome == verify.Fail }) {
		t.Errorf("failing suite: no per-test result is a failure: %+v", res.Results)
	}
}

// suiteResults runs the Outcomes unit as a suite target: Results holds
// every test and every row of a parameterised test by its own ID.
func (s *suite) suiteResults(t *testing.T) {
	o := s.lang.Outcomes
	res, err := s.adapter().RunSuite(t.Context(), s.lang.Runner, repo(t, o.Files), []string{o.Unit}, 5*time.Minute)
	if err != nil {
		t.Fatalf("RunSuite(%q): %v", o.Unit, err)
	}
	if res.Outcome != verify.Fail {
		t.Errorf("RunSuite(%q): %s (%q), want fail", o.Unit, res.Outcome, res.Detail)
	}
	byID := map[string]verify.TestResult{}
	for _, r := range res.Results {
		byID[r.Test.ID()] = r
	}
	for _, want := range []outcomeCase{
		{o.Pass, verify.Pass, ""}, {o.Fail, verify.Fail, o.FailText}, {o.Skip, verify.Skip, ""},
		{o.ParamPass, verify.Pass, ""}, {o.ParamFail, verify.Fail, ""},
	} {
		r, ok := byID[want.test.ID()]
		switch {
		case !ok:
			t.Errorf("RunSuite(%q): no result for %s among %d", o.Unit, want.test.ID(), len(res.Results))
		case r.Outcome != want.outcome:
			t.Errorf("RunSuite(%q): %s %s (%q), want %s", o.Unit, want.test.ID(), r.Outcome, r.Detail, want.outcome)
		case !strings.Contains(r.Detail, want.text):
			t.Errorf("RunSuite(%q): %s detail %q lacks %q", o.Unit, want.test.ID(), r.Detail, want.text)
		}
	}
}

func (s *suite) suiteWithoutTests(t *testing.T) {
	res := s.runSuite(t, map[string]string{"README.md": "nothing to test\n", s.lang.Foreign: "x\n"})
	if res.Outcome != verify.Pass || len(res.Targets) > 0 {
		t.Errorf("a repository with no tests of the language: %s, targets %v (%q), want pass with no targets", res.Outcome, res.Targets, res.Detail)
	}
}

func (s *suite) targets(t *testing.T) {
	change := s.loadChange(t)
	c := s.lang.Change
	if _, ok := change.File(c.Source); !ok {
		t.Fatalf("fixture: the change does not touch Source %s", c.Source)
	}
	got, err := s.adapter().Targets(t.Context(), s.lang.Runner, head(t, change), change)
	if err != nil {
		t.Fatalf("Targets: %v", err)
	}
	if !slices.Contains(got, c.Target) {
		t.Errorf("Targets = %q, want it to include %q, which exercises %s", got, c.Target, c.Source)
	}
}

func (s *suite) tamper(t *testing.T) {
	change := s.loadChange(t)
	got, err := s.adapter().Tamper(t.Context(), change)
	if err != nil {
		t.Fatalf("Tamper: %v", err)
	}
	c := s.lang.Change
	for _, want := range []struct {
		code string
		test verify.Test
	}{{verify.FindingTestDeleted, c.Deleted}, {verify.FindingTestSkipped, c.Skipped}} {
		if !slices.ContainsFunc(got, func(f verify.Finding) bool {
			return f.Code == want.code && f.Path == want.test.File && strings.Contains(f.Message, baseName(want.test.Name))
		}) {
			t.Errorf("Tamper lacks %s at %s naming %s; got %+v", want.code, want.test.File, want.test.Name, got)
		}
	}
	for _, p := range c.Untouched {
		for _, f := range got {
			if f.Path == p {
				t.Errorf("Tamper reports %s on %s, a test file the change does not tamper with: %s", f.Code, p, f.Message)
			}
		}
	}
}

// baseName is a test's last name element (a method of a class, a
// subtest): findings name the test as its file does.
func baseName(name string) string {
	if i := strings.LastIndexAny(name, ":/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

func (s *suite) candidates(t *testing.T) {
	change := s.loadChange(t)
	got, err := s.adapter().Candidates(t.Context(), s.lang.Runner, head(t, change), change)
	if err != nil {
		t.Fatalf("Candidates: %v", err)
	}
	c := s.lang.Change
	if !slices.Contains(got.Support, c.Support) {
		t.Errorf("Candidates.Support = %q, want it to include the changed test-support file %s", got.Support, c.Support)
	}
	if !slices.Contains(got.Units, c.Unit) {
		t.Errorf("Candidates.Units = %q, want it to include %s, the unit of %s", got.Units, c.Unit, c.Modified.ID())
	}
	if slices.Contains(got.Support, c.Source) {
		t.Errorf("Candidates.Support = %q includes %s, code the tests exercise", got.Support, c.Source)
	}
}
