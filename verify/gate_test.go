package verify

import (
	"context"
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

// scripted is an adapter whose outcomes are given per side. The gate's
// decisions are tested here against it; the real adapters are tested
// against real toolchains in their own packages and end to end in cmd/bcode.
type scripted struct {
	tests          []Test
	base, head     map[string]Outcome
	targeted, full Outcome
	tamper         []Finding
}

func (s *scripted) Language() string         { return "fake" }
func (s *scripted) Owns(string) bool         { return true }
func (s *scripted) IsTestFile(p string) bool { return p == "x_test" }
func (s *scripted) ChangedTests(context.Context, *Change) ([]Test, error) {
	return s.tests, nil
}
func (s *scripted) RunTests(_ context.Context, _ sandbox.Runner, dir string, tests []Test, o RunOptions) ([]TestResult, error) {
	side := s.head
	if dir == "base" || dir == "pristine" {
		side = s.base
	}
	var out []TestResult
	for _, t := range tests {
		for i := 0; i < o.Count; i++ {
			oc := side[t.Name]
			if dir == "pristine" {
				oc = Pass
			}
			out = append(out, TestResult{Test: t, Outcome: oc})
		}
	}
	return out, nil
}
func (s *scripted) Targets(context.Context, sandbox.Runner, string, *Change) ([]string, error) {
	return []string{"t"}, nil
}
func (s *scripted) RunSuite(_ context.Context, _ sandbox.Runner, _ string, targets []string, _ time.Duration) (SuiteResult, error) {
	if targets != nil {
		return SuiteResult{Outcome: s.targeted}, nil
	}
	return SuiteResult{Outcome: s.full}, nil
}
func (s *scripted) Tamper(context.Context, *Change) ([]Finding, error) { return s.tamper, nil }

type dirs struct{}

func (d *dirs) Materialize(_ context.Context, side Side, overlay []FileChange) (string, error) {
	if side == HeadSide {
		return "head", nil
	}
	if overlay == nil {
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

func TestGateVerdicts(t *testing.T) {
	tA := Test{Language: "fake", Package: ".", File: "x_test", Name: "A"}
	change := &Change{Base: "b", Head: "h", Files: []FileChange{{Path: "x_test", Status: Modified}}, Workspace: &dirs{}}
	cases := []struct {
		name string
		s    scripted
		ev   *MutationSummary
		max  int
		want Verdict
	}{
		{"verified", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Pass}, nil, -1, Verified},
		{"green: passes on base", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Pass}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Pass}, nil, -1, Green},
		{"green: no tests", scripted{targeted: Pass, full: Pass}, nil, -1, Green},
		{"failed: test fails on head", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Fail}, targeted: Pass, full: Pass}, nil, -1, Failed},
		{"failed: full suite", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Fail}, nil, -1, Failed},
		{"tampered wins over verified", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Pass, tamper: []Finding{{Code: FindingTestSkipped, Path: "x_test"}}}, nil, -1, Tampered},
		{"error: toolchain", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": EnvError}, head: map[string]Outcome{"A": EnvError}, targeted: EnvError, full: Pass}, nil, -1, Error},
		{"green: credited kills no mutant", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Pass},
			&MutationSummary{Mutants: []MutantVerdict{{ID: "m", Verdict: "survived"}}, Survived: 1}, -1, Green},
		{"verified: credited kills one, survivors allowed", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Pass},
			&MutationSummary{Mutants: []MutantVerdict{{ID: "m", Verdict: "killed"}, {ID: "n", Verdict: "survived"}}, CreditedKills: 1, Survived: 1}, -1, Verified},
		{"green: too many survivors for the base's config", scripted{tests: []Test{tA}, base: map[string]Outcome{"A": Fail}, head: map[string]Outcome{"A": Pass}, targeted: Pass, full: Pass},
			&MutationSummary{Mutants: []MutantVerdict{{ID: "m", Verdict: "killed"}, {ID: "n", Verdict: "survived"}}, CreditedKills: 1, Survived: 1}, 0, Green},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s}}
			if c.ev != nil {
				ev := c.ev
				g.Evidence = func(context.Context, sandbox.Runner, string, *Change, []Test) (*MutationSummary, error) {
					return ev, nil
				}
			}
			cfg := config.Default()
			cfg.Evidence.MaxSurvivors = c.max
			rep, err := g.Check(context.Background(), change, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != c.want {
				t.Fatalf("verdict %s, want %s; reasons %+v", rep.Verdict, c.want, rep.Reasons)
			}
			if len(rep.Reasons) == 0 {
				t.Fatalf("verdict %s without reasons", rep.Verdict)
			}
		})
	}
}

func TestExistedOnBase(t *testing.T) {
	change := &Change{Files: []FileChange{
		{Path: "new/x_test.go", Status: Added, Head: []byte("func TestNew(t *testing.T) {}")},
		{Path: "old/y_test.go", Status: Modified, Base: []byte("func TestOld(t *testing.T) {}"), Head: []byte("func TestOld(t *testing.T) {}\nfunc TestAdded(t *testing.T) {}")},
		{Path: "tests/test_z.py", Status: Modified, Base: []byte("class TestC:\n    def test_m(self): pass\n"), Head: []byte("")},
	}}
	cases := []struct {
		test Test
		want bool
	}{
		{Test{File: "new/x_test.go", Name: "TestNew"}, false},       // a file the change adds
		{Test{File: "old/y_test.go", Name: "TestAdded"}, false},     // the base file never names it
		{Test{File: "old/y_test.go", Name: "TestOld"}, true},        // a modified test
		{Test{File: "old/y_test.go", Name: "TestOld/case_1"}, true}, // its subtest
		{Test{File: "tests/test_z.py", Name: "TestC::test_m"}, true},
		{Test{File: "missing.go", Name: "TestGone"}, false},
	}
	for _, c := range cases {
		if got := existedOnBase(c.test, change); got != c.want {
			t.Errorf("existedOnBase(%s %s) = %v, want %v", c.test.File, c.test.Name, got, c.want)
		}
	}
}
