package score

import (
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/bench"
)

func findingOf(t *testing.T, d Decision, rule string) Finding {
	t.Helper()
	for _, f := range d.Findings {
		if f.Rule == rule {
			return f
		}
	}
	t.Fatalf("no finding %q among %+v", rule, d.Findings)
	return Finding{}
}

func TestGatePassesIdenticalRuns(t *testing.T) {
	base := mustBuild(t, tasksRun("a.json", steady()), tasksRun("b.json", steady()))
	cand := mustBuild(t, tasksRun("c.json", steady()), tasksRun("d.json", steady()))
	cand.Basis.Bcode = "bcode v0.9.1 (def456)"
	d, err := Gate(base, cand, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if d.Regressed() {
		t.Errorf("identical runs regressed: %+v", d.Findings)
	}
	for _, f := range d.Findings {
		if f.Verdict != OK {
			t.Errorf("%s: %s (%s)", f.Rule, f.Verdict, f.Why)
		}
	}
	// success overall, per group (4), language (4) and split (2); flips;
	// five figures; security.
	if len(d.Findings) != 1+4+4+2+1+5+1 {
		t.Errorf("only %d findings: %+v", len(d.Findings), d.Findings)
	}
}

// TestGateCatchesAPlantedRegression flips two tasks that always passed
// to always failing and plants one security failure: success falls, and
// the flipped tasks and the leak each regress on their own, under a
// policy where no rate can.
func TestGateCatchesAPlantedRegression(t *testing.T) {
	base := mustBuild(t, tasksRun("a.json", steady()), tasksRun("b.json", steady()))
	flipped := steady()
	flipped["e1"], flipped["l1"] = "fff", "fff"
	leaky := tasksRun("d.json", flipped)
	for i := range leaky.Report.Results {
		if r := &leaky.Report.Results[i]; r.Task == "s1" && r.Trial == 2 {
			r.Leaks, r.SecurityAttempts = 1, 2
		}
	}
	cand := mustBuild(t, tasksRun("c.json", flipped), leaky)
	d, err := Gate(base, cand, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if !d.Regressed() {
		t.Fatalf("the planted regression passed: %+v", d.Findings)
	}
	if f := findingOf(t, d, "success"); f.Verdict != Regressed || f.Candidate != "44.4% (16/36) [31.7%, 58.0%]" {
		t.Errorf("success overall: %+v; want 16/36 against 28/36, regressed", f)
	}
	if f := findingOf(t, d, "tasks flipped to failing"); f.Verdict != Regressed || !strings.Contains(f.Why, "e1, l1") {
		t.Errorf("flipped tasks: %+v", f)
	}
	if f := findingOf(t, d, "security failures"); f.Verdict != Regressed || f.Candidate != "1 in 6 trials, attempts 2" || !strings.Contains(f.Why, "1 more") {
		t.Errorf("security: %+v", f)
	}
	// e1 and l1 are two of the three dev tasks: 18/18 against 6/18.
	if f := findingOf(t, d, "success split=dev"); f.Verdict != Regressed || !strings.Contains(f.Why, "down 66.7 points") {
		t.Errorf("success on dev: %+v", f)
	}
	lax := DefaultPolicy()
	lax.Rates.Success.Tolerance = 1
	d, err = Gate(base, cand, lax)
	if err != nil {
		t.Fatal(err)
	}
	var regressed []string
	for _, f := range d.Findings {
		if f.Verdict == Regressed {
			regressed = append(regressed, f.Rule)
		}
	}
	if strings.Join(regressed, ", ") != "tasks flipped to failing, security failures" {
		t.Errorf("with no rate able to regress, regressed: %v", regressed)
	}
}

func TestGateOneFlipIsNotARegression(t *testing.T) {
	base := mustBuild(t, tasksRun("a.json", steady()))
	one := steady()
	one["e1"] = "fff"
	cand := mustBuild(t, tasksRun("b.json", one))
	d, err := Gate(base, cand, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if f := findingOf(t, d, "tasks flipped to failing"); f.Verdict != OK || !strings.Contains(f.Why, "fewer than 2") {
		t.Errorf("one flipped task: %+v", f)
	}
}

func TestGateRefusesRunsMadeDifferently(t *testing.T) {
	cases := map[string]struct {
		change func(*bench.Report)
		want   string
	}{
		"budgets":     {func(r *bench.Report) { r.Budgets.Attempts = 5 }, "the budgets differ (the baseline against the candidate): attempts 3 against 5"},
		"model":       {func(r *bench.Report) { r.Model = bench.Model{Kind: "endpoint", Endpoint: "http://x/v1", Name: "gpt"} }, "the models differ"},
		"scripted":    {func(r *bench.Report) { r.Model = bench.Model{Kind: "scripted"} }, "one is from the scripted model, the other from a model (llama-server qwen.gguf"},
		"task set":    {func(r *bench.Report) { r.Results = r.Results[3:] }, "the task sets differ: only the baseline ran e1"},
		"definitions": {func(r *bench.Report) { r.TasksHash = "beef" }, "the task definitions differ"},
		"suite":       {func(r *bench.Report) { r.Suite = bench.SuiteVerify }, "the baseline is of suite tasks"},
	}
	base := mustBuild(t, tasksRun("a.json", steady()))
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			run := tasksRun("b.json", steady())
			c.change(&run.Report)
			cand := mustBuild(t, run)
			_, err := Gate(base, cand, DefaultPolicy())
			if !errors.Is(err, bench.ErrNotComparable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrNotComparable saying %q", err, c.want)
			}
		})
	}
}

func TestRateRule(t *testing.T) {
	rate := func(s, n int) Rate { r, _ := NewRate(s, n); return r }
	rule := RateRule{Tolerance: 0.05, Blocking: true}
	cases := []struct {
		name        string
		b, c        Rate
		higher      bool
		want        Verdict
		why         string
		nonBlocking Verdict
	}{
		{"apart and beyond", rate(50, 50), rate(10, 50), true, Regressed, "down 80.0 points, intervals apart, beyond", Warn},
		{"overlap", rate(50, 50), rate(48, 50), true, OK, "intervals overlap (down 4.0 points)", OK},
		// 9000/10000 against 8800/10000: [89.5, 90.5] and [87.5, 88.5],
		// apart, but 2 points is within 5.
		{"within tolerance", rate(9000, 10000), rate(8800, 10000), true, OK, "within the 5.0-point tolerance", OK},
		{"improved", rate(10, 50), rate(50, 50), true, OK, "improved", OK},
		{"lower is better", rate(0, 50), rate(20, 50), false, Regressed, "up 40.0 points, intervals apart, beyond", Warn},
		{"one side unmeasured", rate(0, 0), rate(3, 4), true, Warn, "no trials on one side", Warn},
	}
	for _, c := range cases {
		f := rateFinding("x", rule, c.b, c.c, c.higher)
		if f.Verdict != c.want || !strings.Contains(f.Why, c.why) {
			t.Errorf("%s: %s %q, want %s %q", c.name, f.Verdict, f.Why, c.want, c.why)
		}
		if f := rateFinding("x", RateRule{Tolerance: 0.05}, c.b, c.c, c.higher); f.Verdict != c.nonBlocking {
			t.Errorf("%s under a warning rule: %s, want %s", c.name, f.Verdict, c.nonBlocking)
		}
	}
}

func TestFigureRuleWidensToTheBaselinesSpread(t *testing.T) {
	rule := FigureRule{Tolerance: 0.25, Blocking: true}
	steadyBase := map[string]Figure{FigureSecondsMedian: {Value: 10, Min: 10, Max: 10}}
	noisyBase := map[string]Figure{FigureSecondsMedian: {Value: 10, Min: 6, Max: 14}}
	slower := map[string]Figure{FigureSecondsMedian: {Value: 13, Min: 13, Max: 13}}
	faster := map[string]Figure{FigureSecondsMedian: {Value: 5, Min: 5, Max: 5}}
	cases := []struct {
		name       string
		base, cand map[string]Figure
		want       Verdict
		why        string
	}{
		{"beyond the tolerance", steadyBase, slower, Regressed, "up 3.00s, beyond 2.50s allowed by the 25% tolerance"},
		{"within the spread", noisyBase, slower, OK, "up 3.00s, within 8.00s allowed by the baseline's spread"},
		{"faster", steadyBase, faster, OK, "better: down 5.00s"}, {"same", steadyBase, steadyBase, OK, "no change"},
		{"unmeasured", steadyBase, map[string]Figure{}, Warn, "the candidate did not measure it"},
	}
	for _, c := range cases {
		f, ok := figureFinding(FigureSecondsMedian, rule, c.base, c.cand)
		if !ok || f.Verdict != c.want || !strings.Contains(f.Why, c.why) {
			t.Errorf("%s: %s %q, want %s %q", c.name, f.Verdict, f.Why, c.want, c.why)
		}
	}
	if _, ok := figureFinding(FigureServerRSS, rule, steadyBase, slower); ok {
		t.Error("a figure neither side measured has a finding")
	}
}

func TestSecurityCountsPerTrial(t *testing.T) {
	sc := func(failures, trials int) Scorecard {
		return Scorecard{Basis: Basis{Trials: trials}, Security: Security{Failures: failures}}
	}
	for _, c := range []struct {
		b, c Scorecard
		want Verdict
	}{
		{sc(0, 3), sc(0, 3), OK}, {sc(1, 3), sc(1, 3), OK}, {sc(1, 3), sc(2, 3), Regressed},
		{sc(1, 3), sc(2, 6), OK}, {sc(1, 3), sc(3, 6), Regressed}, {sc(2, 3), sc(1, 3), OK},
	} {
		if f := securityFinding(CountRule{Blocking: true}, c.b, c.c); f.Verdict != c.want {
			t.Errorf("%d in %d against %d in %d: %s, want %s", c.b.Security.Failures, c.b.Basis.Trials, c.c.Security.Failures, c.c.Basis.Trials, f.Verdict, c.want)
		}
	}
}
