package verify

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
)

func TestCreditReason(t *testing.T) {
	cases := []struct {
		base, head, control Outcome
		want                string
	}{
		{Fail, Pass, "", ReasonCredited},
		{Fail, Pass, Pass, ReasonCredited},
		{Fail, Pass, NotRun, ReasonCredited}, // new test: did not exist on the base
		{Fail, Pass, Fail, ReasonBaseBroken},
		{Fail, Pass, BuildError, ReasonBaseBroken},
		{Pass, Pass, "", ReasonPassesOnBase},
		{BuildError, Pass, "", ReasonNoBuildOnBase},
		{ImportError, Pass, "", ReasonImportOnBase},
		{MissingSymbol, Pass, "", ReasonMissingOnBase},
		{Skip, Pass, "", ReasonSkippedOnBase},
		{Timeout, Pass, "", ReasonTimeoutOnBase},
		{EnvError, Pass, "", ReasonEnvOnBase},
		{NotRun, Pass, "", ReasonNotRunOnBase},
		{Flaky, Pass, "", ReasonFlaky},
		{Fail, Flaky, "", ReasonFlaky},
		{Fail, Fail, "", ReasonFailsOnHead},
		{Pass, Fail, "", ReasonFailsOnHead},
		{Fail, Skip, "", ReasonSkippedOnHead},
		{Fail, BuildError, "", ReasonNoBuildOnHead},
		{Fail, Timeout, "", ReasonTimeoutOnHead},
		{Fail, NotRun, "", ReasonNotRunOnHead},
	}
	for _, c := range cases {
		if got := creditReason(c.base, c.head, c.control); got != c.want {
			t.Errorf("creditReason(%s, %s, %q) = %s, want %s", c.base, c.head, c.control, got, c.want)
		}
		if reasonText[c.want] == "" {
			t.Errorf("reason %s has no sentence", c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	r := func(o Outcome) TestResult { return TestResult{Outcome: o, Duration: time.Second} }
	cases := []struct {
		runs []TestResult
		want Outcome
	}{
		{nil, NotRun},
		{[]TestResult{r(Pass), r(Pass), r(Pass)}, Pass},
		{[]TestResult{r(Fail), r(Fail), r(Fail)}, Fail},
		{[]TestResult{r(Fail), r(Pass), r(Fail)}, Flaky},
		{[]TestResult{r(Pass), r(Timeout)}, Flaky},
		{[]TestResult{r(Fail), r(BuildError)}, BuildError},
		{[]TestResult{r(Skip), r(Skip)}, Skip},
	}
	for _, c := range cases {
		if got := summarize(c.runs).Outcome; got != c.want {
			t.Errorf("summarize(%v) = %s, want %s", c.runs, got, c.want)
		}
	}
}

// scripted is an adapter whose outcomes are given per snapshot. The gate's
// decisions are tested here against it; the real adapters are tested
// against real toolchains in their own packages and end to end in
// engine/check.
type scripted struct {
	hinted []Test
	// Outcomes by test name on each snapshot: pristine (the untouched
	// base), base (the base with the head's tests), head, old (the head
	// with the base's tests). A missing map on pristine means "like base".
	pristine, base, head, old map[string]Outcome
	tamper                    []Finding
	ran                       *runLog // when set, the snapshots RunSuite ran in
	// flakyHead names a test whose repeats on the head fail.
	flakyHead string
}

type runLog struct {
	mu   sync.Mutex
	dirs []string
}

func (s *scripted) Language() string         { return "fake" }
func (s *scripted) Owns(string) bool         { return true }
func (s *scripted) IsTestFile(p string) bool { return p == "x_test" }
func (s *scripted) ChangedTests(context.Context, *Change) ([]Test, error) {
	return s.hinted, nil
}
func (s *scripted) side(dir string) map[string]Outcome {
	switch dir {
	case "pristine":
		return s.pristine
	case "base":
		return s.base
	case "old":
		return s.old
	}
	return s.head
}
func (s *scripted) RunTests(_ context.Context, _ sandbox.Runner, dir string, tests []Test, o RunOptions) ([]TestResult, error) {
	var out []TestResult
	for _, t := range tests {
		for i := 0; i < o.Count; i++ {
			oc := s.side(dir)[t.Name]
			if dir == "head" && t.Name == s.flakyHead {
				oc = Fail
			}
			out = append(out, TestResult{Test: t, Outcome: oc})
		}
	}
	return out, nil
}
func (s *scripted) Targets(context.Context, sandbox.Runner, string, *Change) ([]string, error) {
	return []string{"."}, nil
}
func (s *scripted) RunSuite(_ context.Context, _ sandbox.Runner, dir string, _ []string, _ time.Duration) (SuiteResult, error) {
	if s.ran != nil {
		s.ran.mu.Lock()
		s.ran.dirs = append(s.ran.dirs, dir)
		s.ran.mu.Unlock()
	}
	res := SuiteResult{Outcome: Pass, Units: []UnitResult{{Unit: ".", Outcome: Pass}}}
	names := []string{}
	for n := range s.side(dir) {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		o := s.side(dir)[n]
		if o == EnvError {
			res.Outcome = EnvError
		}
		res.Results = append(res.Results, TestResult{Test: Test{Language: "fake", Package: ".", File: "x_test", Name: n}, Outcome: o})
	}
	return res, nil
}
func (s *scripted) Tamper(context.Context, *Change) ([]Finding, error) { return s.tamper, nil }
func (s *scripted) Candidates(context.Context, sandbox.Runner, string, *Change) (Candidates, error) {
	return Candidates{Support: []string{"x_test"}, Units: []string{"."}}, nil
}

type dirs struct{}

func (d *dirs) Materialize(_ context.Context, side Side, overlay []FileChange) (string, error) {
	switch {
	case side == HeadSide && overlay == nil:
		return "head", nil
	case side == HeadSide:
		return "old", nil
	case overlay == nil:
		return "pristine", nil
	}
	return "base", nil
}
func (d *dirs) ReadBase(context.Context, string) ([]byte, error) { return nil, nil }
func (d *dirs) Close() error                                     { return nil }

type nameRunner struct{}

func (nameRunner) Name() string { return "test" }
func (nameRunner) Run(context.Context, sandbox.Command) (sandbox.Result, error) {
	return sandbox.Result{}, nil
}

// codeAndTestChange is a change that touches code as well as its test:
// every snapshot differs.
func codeAndTestChange() *Change {
	return &Change{Base: "b", Head: "h", Files: []FileChange{{Path: "x", Status: Modified, Base: []byte("old"), Head: []byte("new")}, {Path: "x_test", Status: Modified, Base: []byte("old"), Head: []byte("new")}}, Workspace: &dirs{}}
}

// outcomes builds a test-name → outcome map from pairs.
func outcomes(kv ...any) map[string]Outcome {
	m := map[string]Outcome{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(Outcome)
	}
	return m
}

func TestGateVerdicts(t *testing.T) {
	tA := Test{Language: "fake", Package: ".", File: "x_test", Name: "A"}
	// The change touches code as well as its test: every snapshot differs.
	change := codeAndTestChange()
	o := outcomes
	yes, no := true, false
	cases := []struct {
		name  string
		s     scripted
		ev    *MutationSummary
		max   int
		agent bool
		allow *bool
		want  Verdict
		code  string // a reason or finding code the report must carry
	}{
		{name: "verified", s: scripted{hinted: []Test{tA}, pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Pass)}, max: -1, want: Verified, code: ReasonCredited},
		{name: "verified without a static hint: credit is by what runs", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Pass)}, max: -1, want: Verified, code: ReasonCredited},
		{name: "green: passes on base", s: scripted{hinted: []Test{tA}, pristine: o(), base: o("A", Pass), head: o("A", Pass), old: o()}, max: -1, want: Green, code: ReasonNothingCredited},
		{name: "green: no tests", s: scripted{pristine: o(), base: o(), head: o(), old: o()}, max: -1, want: Green},
		{name: "failed: test fails on head", s: scripted{hinted: []Test{tA}, pristine: o(), base: o("A", Fail), head: o("A", Fail), old: o()}, max: -1, want: Failed},
		{name: "failed: pass to pass", s: scripted{hinted: []Test{tA}, pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Fail), old: o("B", Fail)}, max: -1, want: Failed, code: ReasonFullFailed},
		{name: "tampered: a passing test skipped at run time", s: scripted{hinted: []Test{tA}, pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Skip), old: o("B", Skip)}, max: -1, want: Tampered, code: FindingTestVanished},
		{name: "tampered: a passing test not run on the head", s: scripted{hinted: []Test{tA}, pristine: o("B", Pass), base: o("A", Fail), head: o("A", Pass), old: o()}, max: -1, want: Tampered, code: FindingTestVanished},
		{name: "tampered wins over verified", s: scripted{hinted: []Test{tA}, pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o(), tamper: []Finding{{Code: FindingTestSkipped, Path: "x_test"}}}, max: -1, want: Tampered},
		{name: "error: toolchain", s: scripted{hinted: []Test{tA}, pristine: o("A", EnvError), base: o("A", EnvError), head: o("A", EnvError), old: o()}, max: -1, want: Error},
		{name: "changed expectations of an uncredited test block", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Fail)}, max: -1, want: Tampered, code: ReasonChangedExpectations},
		{name: "changed expectations allowed by the base's config", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Fail)}, max: -1, allow: &yes, want: Verified},
		{name: "changed expectations of a credited test: a person's change is green, the rewrite named", s: scripted{pristine: o("A", Pass), base: o("A", Fail), head: o("A", Pass), old: o("A", Fail)}, max: -1, want: Green, code: ReasonChangedExpectations},
		{name: "changed expectations of a credited test: a person's change the base allows", s: scripted{pristine: o("A", Pass), base: o("A", Fail), head: o("A", Pass), old: o("A", Fail)}, max: -1, allow: &yes, want: Verified},
		{name: "changed expectations of a credited test: an agent's change", s: scripted{pristine: o("A", Pass), base: o("A", Fail), head: o("A", Pass), old: o("A", Fail)}, max: -1, agent: true, want: Tampered, code: ReasonChangedExpectations},
		{name: "changed expectations forbidden by the base's config", s: scripted{pristine: o("A", Pass), base: o("A", Fail), head: o("A", Pass), old: o("A", Fail)}, max: -1, allow: &no, want: Tampered, code: ReasonChangedExpectations},
		{name: "green: credited kills no mutant", s: scripted{pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o()},
			ev: &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "survived"}}, Survived: 1}, max: -1, want: Green},
		{name: "verified: every mutant is killed by other tests, nothing left for the credited test", s: scripted{pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o()},
			ev: &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "killed"}, {ID: "n", Verdict: "killed"}}}, max: 0, want: Verified, code: ReasonCredited},
		{name: "green: credited kills none, one not covered", s: scripted{pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o()},
			ev: &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "killed"}, {ID: "n", Verdict: "not_covered"}}}, max: -1, want: Green, code: ReasonNoKill},
		{name: "verified: credited kills one, survivors allowed", s: scripted{pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o()},
			ev: &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "killed"}, {ID: "n", Verdict: "survived"}}, CreditedKills: 1, Survived: 1}, max: -1, want: Verified},
		{name: "green: too many survivors for the base's config", s: scripted{pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o()},
			ev: &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "killed"}, {ID: "n", Verdict: "survived"}}, CreditedKills: 1, Survived: 1}, max: 0, want: Green},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s}, AgentTask: c.agent}
			if c.ev != nil {
				ev := c.ev
				g.Evidence = func(context.Context, sandbox.Runner, string, *Change, []Test) (*MutationSummary, error) {
					return ev, nil
				}
			}
			cfg := config.Default()
			cfg.Evidence.MaxSurvivors = c.max
			cfg.Gate.AllowChangedExpectations = c.allow
			rep, err := g.Check(context.Background(), change, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != c.want {
				t.Fatalf("verdict %s, want %s; reasons %+v; tamper %+v; tests %+v", rep.Verdict, c.want, rep.Reasons, rep.Tamper, rep.Tests)
			}
			if len(rep.Reasons) == 0 {
				t.Fatalf("verdict %s without reasons", rep.Verdict)
			}
			if c.code != "" && !hasCode(rep, c.code) {
				t.Fatalf("no %s in reasons %+v or findings %+v", c.code, rep.Reasons, rep.Tamper)
			}
		})
	}
}

func hasCode(rep *Report, code string) bool {
	for _, r := range rep.Reasons {
		if r.Code == code {
			return true
		}
	}
	for _, f := range rep.Tamper {
		if f.Code == code {
			return true
		}
	}
	return false
}

// A change to tests alone makes the base with the head's tests the head,
// and the head with the base's tests the base: those snapshots are neither
// made nor run, their results are the units' part of the full runs, and
// the verdicts stay those of runs.
func TestGateTestOnlyChangeRunsTwoSnapshots(t *testing.T) {
	o := outcomes
	testOnly := &Change{Base: "b", Head: "h", Files: []FileChange{{Path: "x_test", Status: Modified, Base: []byte("old"), Head: []byte("new")}}, Workspace: &dirs{}}
	cases := []struct {
		name string
		s    scripted
		want Verdict
		code string
	}{
		// "base" and "old" would give credit and a changed expectation;
		// content that equals the head and the base cannot.
		{name: "a new test that passes on both sides", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Fail)}, want: Green, code: ReasonNothingCredited},
		{name: "an existing test skipped", s: scripted{pristine: o("B", Pass), base: o("B", Pass), head: o("B", Skip), old: o("B", Pass)}, want: Tampered, code: FindingTestVanished},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			s.ran = &runLog{}
			g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s}}
			rep, err := g.Check(context.Background(), testOnly, config.Default())
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(s.ran.dirs)
			if !slices.Equal(s.ran.dirs, []string{"head", "pristine"}) {
				t.Errorf("suites ran in %v, want the head and the untouched base only", s.ran.dirs)
			}
			if rep.Verdict != c.want || !hasCode(rep, c.code) {
				t.Fatalf("verdict %s, want %s with %s; reasons %+v; tamper %+v", rep.Verdict, c.want, c.code, rep.Reasons, rep.Tamper)
			}
		})
	}
}
