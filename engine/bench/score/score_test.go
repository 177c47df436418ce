package score

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/verify"
)

// The tasks suite's tasks of the tests: two everyday Go tasks, a
// long-running Python one, a security task and two polyglot ones.
var testTasks = []bench.Task{
	{ID: "e1", Suite: bench.SuiteTasks, Group: bench.GroupEveryday, Language: "go", Split: bench.SplitDev},
	{ID: "e2", Suite: bench.SuiteTasks, Group: bench.GroupEveryday, Language: "go", Split: bench.SplitDev},
	{ID: "l1", Suite: bench.SuiteTasks, Group: bench.GroupLongRunning, Language: "python", Split: bench.SplitDev},
	{ID: "s1", Suite: bench.SuiteTasks, Group: bench.GroupSecurity, Language: "go", Split: bench.SplitHeldout},
	{ID: "p1", Suite: bench.SuiteTasks, Group: bench.GroupPolyglot, Language: "javascript", Split: bench.SplitHeldout},
	{ID: "p2", Suite: bench.SuiteTasks, Group: bench.GroupPolyglot, Language: "rust", Split: bench.SplitHeldout},
}

// tasksRun is a tasks suite report: outcomes gives each task's outcome
// per trial, one letter a trial (p pass, f fail, e error), and every
// trial of task i takes 10·(i+1) seconds plus the trial number.
func tasksRun(name string, outcomes map[string]string) Run {
	rep := bench.Report{
		Suite: bench.SuiteTasks, Bcode: "bcode v0.9.0 (abc123)",
		Model:     bench.Model{Kind: "llama-server", File: "qwen.gguf", SHA256: strings.Repeat("ab", 32)},
		Budgets:   bench.Budgets{Attempts: 3, WallClock: 10 * time.Minute, Tokens: 20000, Escalations: 1},
		TasksHash: strings.Repeat("11", 32), Fixtures: map[string]string{},
		Started: time.Date(2026, 12, 7, 4, 0, startSecond(name), 0, time.UTC),
	}
	for i, task := range testTasks {
		o, ok := outcomes[task.ID]
		if !ok {
			continue
		}
		rep.Tasks = append(rep.Tasks, task)
		rep.Fixtures[task.ID] = strings.Repeat("f", 63) + string(rune('0'+i))
		rep.Trials = len(o)
		for trial, letter := range o {
			res := bench.Result{
				Task: task.ID, Trial: trial + 1, Seconds: float64(10*(i+1) + trial),
				Tokens: 1000, ModelCalls: 4, ServerRSS: int64(100+trial) << 20,
				Outcome: map[rune]bench.Outcome{'p': bench.Pass, 'f': bench.Fail, 'e': bench.Error}[letter],
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return Run{Name: name, Report: rep}
}

// startSecond tells runs of different names apart by their start: the
// sum of the name's bytes modulo 60 (a.json: 585, second 45).
func startSecond(name string) int {
	sum := 0
	for _, b := range []byte(name) {
		sum += int(b)
	}
	return sum % 60
}

// steady is a tasks run where e1, e2 and l1 always pass, p1 is flaky
// and p2 always fails.
func steady() map[string]string {
	return map[string]string{"e1": "ppp", "e2": "ppp", "l1": "ppp", "s1": "ppp", "p1": "pfp", "p2": "fff"}
}

func mustBuild(t *testing.T, runs ...Run) Scorecard {
	t.Helper()
	sc, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestBuildTasksSuite(t *testing.T) {
	sc := mustBuild(t, tasksRun("a.json", steady()), tasksRun("b.json", steady()))
	if sc.Basis.Reports != 2 || sc.Basis.Trials != 6 || len(sc.Basis.Tasks) != 6 {
		t.Errorf("basis: %d reports, %d trials, tasks %v", sc.Basis.Reports, sc.Basis.Trials, sc.Basis.Tasks)
	}
	// 4 tasks × 6 trials pass, p1 4 of 6, p2 none: 28 of 36.
	want := map[string][2]int{
		"overall": {28, 36}, "everyday": {12, 12}, "polyglot": {4, 12}, "go": {18, 18}, "javascript": {4, 6},
		"rust": {0, 6}, "dev": {18, 18}, "heldout": {10, 18},
	}
	got := map[string]Rate{
		"overall": sc.Success.Overall, "everyday": sc.Success.Group[bench.GroupEveryday], "polyglot": sc.Success.Group[bench.GroupPolyglot],
		"go": sc.Success.Language["go"], "javascript": sc.Success.Language["javascript"], "rust": sc.Success.Language["rust"],
		"dev": sc.Success.Split[bench.SplitDev], "heldout": sc.Success.Split[bench.SplitHeldout],
	}
	for k, w := range want {
		if got[k].Successes != w[0] || got[k].Trials != w[1] {
			t.Errorf("success %s: %d/%d, want %d/%d", k, got[k].Successes, got[k].Trials, w[0], w[1])
		}
	}
	if sc.FalseAcceptance != nil || sc.FalseRejection != nil {
		t.Error("a tasks suite scorecard has verify-suite rates")
	}
	if !reflect.DeepEqual(sc.Flaky, []string{"p1"}) {
		t.Errorf("flaky %v, want [p1]", sc.Flaky)
	}
	if len(sc.Limitations) != 0 {
		t.Errorf("limitations %q of a run of a model with nothing skipped", sc.Limitations)
	}
}

func TestBuildFigures(t *testing.T) {
	sc := mustBuild(t, tasksRun("a.json", steady()), tasksRun("b.json", steady()))
	// Task i's trial t (0, 1, 2 in each report) takes 10·(i+1) + t
	// seconds. All 36 sorted: 10 10 11 11 12 12 20 … 32 32 (the 18
	// smallest), then 40 40 …: the median is (32 + 40)/2 = 36. One trial
	// alone is 10+t … 60+t: median 35+t, so 35 to 37.
	sec := sc.Figures[FigureSecondsMedian]
	if sec.Value != 36 {
		t.Errorf("median seconds %v, want 36", sec.Value)
	}
	if sec.Min != 35 || sec.Max != 37 || len(sec.PerTrial) != 6 {
		t.Errorf("median seconds spread %v–%v over %v", sec.Min, sec.Max, sec.PerTrial)
	}
	// p90 by nearest rank: the ⌈0.9·36⌉ = 33rd smallest of all, among
	// 60 60 61 61 62 62, is 61; of one trial alone the ⌈5.4⌉ = 6th, 60+t.
	if p90 := sc.Figures[FigureSecondsP90]; p90.Value != 61 || p90.Min != 60 || p90.Max != 62 {
		t.Errorf("p90 seconds %+v", p90)
	}
	// 36 results of 1000 tokens over 28 passes; a trial 1 has 5 passes,
	// trial 2 (p1 fails) 4.
	if tps := sc.Figures[FigureTokensPerSuccess]; math.Abs(tps.Value-36000.0/28) > 1e-9 || tps.Min != 1200 || tps.Max != 1500 {
		t.Errorf("tokens per success %+v", tps)
	}
	if mc := sc.Figures[FigureModelCalls]; mc.Value != 4 || mc.Stddev != 0 {
		t.Errorf("model calls %+v", mc)
	}
	if rss := sc.Figures[FigureServerRSS]; rss.Value != 102<<20 || rss.Min != 100<<20 {
		t.Errorf("server memory %+v", rss)
	}
}

func TestBuildLimitationsAndErrors(t *testing.T) {
	run := tasksRun("a.json", map[string]string{"e1": "pe", "e2": "pp"})
	run.Report.Model = bench.Model{Kind: "scripted"}
	run.Report.Skipped = []bench.Skip{{Task: "r9", Reason: "no cargo"}}
	run.Report.Limitations = []string{"one machine"}
	sc := mustBuild(t, run)
	if sc.Errors != 1 || sc.Success.Overall.Successes != 3 || sc.Success.Overall.Trials != 4 {
		t.Errorf("errors %d, success %v: an error counts as a trial that did not pass", sc.Errors, sc.Success.Overall)
	}
	text := strings.Join(sc.Limitations, "\n")
	for _, want := range []string{"scripted model", "one machine", "task r9 skipped: no cargo", "1 trials could not be graded"} {
		if !strings.Contains(text, want) {
			t.Errorf("limitations %q lack %q", sc.Limitations, want)
		}
	}
}

// verifyRun is a verify suite report: v1 and v2 are labelled verified,
// g1 green and t1 tampered; verdicts gives each task's verdict per trial.
func verifyRun(verdicts map[string][]verify.Verdict) Run {
	labels := map[string]verify.Verdict{"v1": verify.Verified, "v2": verify.Verified, "g1": verify.Green, "t1": verify.Tampered}
	rep := bench.Report{Suite: bench.SuiteVerify, Model: bench.Model{Kind: "scripted"}, Trials: 2, Fixtures: map[string]string{}}
	for _, id := range []string{"v1", "v2", "g1", "t1"} {
		lang := "go"
		if id == "v2" {
			lang = "python"
		}
		rep.Tasks = append(rep.Tasks, bench.Task{ID: id, Suite: bench.SuiteVerify, Group: bench.GroupVerification, Language: lang, Split: bench.SplitDev, Label: labels[id]})
		for trial, v := range verdicts[id] {
			o := bench.Fail
			if v == labels[id] {
				o = bench.Pass
			}
			rep.Results = append(rep.Results, bench.Result{Task: id, Trial: trial, Outcome: o, Verdict: v})
		}
	}
	return Run{Name: "verify.json", Report: rep}
}

func TestBuildVerifySuite(t *testing.T) {
	sc := mustBuild(t, verifyRun(map[string][]verify.Verdict{
		"v1": {verify.Verified, verify.Green}, // one false rejection
		"v2": {verify.Verified, ""},           // no verdict: not counted
		"g1": {verify.Verified, verify.Green}, // one false acceptance
		"t1": {verify.Tampered, verify.Tampered},
	}))
	fa, fr := sc.FalseAcceptance, sc.FalseRejection
	if fa == nil || fr == nil {
		t.Fatal("a verify suite scorecard without false acceptance or rejection")
	}
	if fa.Overall.Successes != 1 || fa.Overall.Trials != 4 {
		t.Errorf("false acceptance %v, want 1 of the 4 trials of g1 and t1", fa.Overall)
	}
	if fr.Overall.Successes != 1 || fr.Overall.Trials != 3 {
		t.Errorf("false rejection %v, want 1 of the 3 trials of v1 and v2 with a verdict", fr.Overall)
	}
	if r := fr.Language["python"]; r.Successes != 0 || r.Trials != 1 {
		t.Errorf("false rejection in python %v, want 0/1", r)
	}
	if !strings.Contains(strings.Join(sc.Limitations, "\n"), "scripted model") {
		t.Errorf("limitations %q lack the scripted model", sc.Limitations)
	}
}

func TestBuildRefusesMixing(t *testing.T) {
	cases := map[string]struct {
		change func(*bench.Report)
		want   string
	}{
		"suite":       {func(r *bench.Report) { r.Suite = bench.SuiteVerify }, "a.json is of suite tasks, b.json of suite verify"},
		"model":       {func(r *bench.Report) { r.Model.SHA256 = strings.Repeat("cd", 32) }, "the models differ"},
		"scripted":    {func(r *bench.Report) { r.Model = bench.Model{Kind: "scripted"} }, "scripted model"},
		"budgets":     {func(r *bench.Report) { r.Budgets.Tokens = 40000 }, "tokens 20000 against 40000"},
		"definitions": {func(r *bench.Report) { r.TasksHash = strings.Repeat("22", 32) }, "task definitions differ"},
		"task set":    {func(r *bench.Report) { r.Results = r.Results[3:] }, "only a.json ran e1"},
		"fixture":     {func(r *bench.Report) { r.Fixtures["e2"] = "0000" }, "task e2's fixture differs"},
		"build":       {func(r *bench.Report) { r.Bcode = "bcode v1.0.0" }, "a scorecard measures one build"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := tasksRun("b.json", steady())
			c.change(&b.Report)
			_, err := Build([]Run{tasksRun("a.json", steady()), b})
			if !errors.Is(err, bench.ErrNotComparable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrNotComparable saying %q", err, c.want)
			}
		})
	}
}

func TestBuildRefusesTheSameRunTwice(t *testing.T) {
	a := tasksRun("a.json", steady())
	b := a
	b.Name = "copy.json"
	_, err := Build([]Run{a, b})
	if !errors.Is(err, ErrReport) || !strings.Contains(err.Error(), "a.json and copy.json are the same run (started 2026-12-07T04:00:45Z)") {
		t.Errorf("the same run twice: %v", err)
	}
}

func TestReadReportRefusesBadReports(t *testing.T) {
	cases := map[string]struct {
		change func(*bench.Report)
		want   string
	}{
		"no results":  {func(r *bench.Report) { r.Results = nil }, "no results"},
		"outcome":     {func(r *bench.Report) { r.Results[0].Outcome = "passed" }, `outcome "passed"`},
		"unknown":     {func(r *bench.Report) { r.Results[0].Task = "zz" }, `task "zz" is not among`},
		"duplicate":   {func(r *bench.Report) { r.Results[1].Trial = 1 }, "two results for trial 1"},
		"missing":     {func(r *bench.Report) { r.Results = r.Results[1:] }, "e1 has no result for trial 1"},
		"trials":      {func(r *bench.Report) { r.Trials = 5 }, "says 5 trials, its results hold 3"},
		"suite":       {func(r *bench.Report) { r.Suite = "speed" }, `suite "speed"`},
		"negative":    {func(r *bench.Report) { r.Results[0].Tokens = -1 }, "negative"},
		"no label":    {func(r *bench.Report) { r.Suite = bench.SuiteVerify }, "has no label"},
		"twice":       {func(r *bench.Report) { r.Tasks = append(r.Tasks, r.Tasks[0]) }, "defined twice"},
		"seconds NaN": {func(r *bench.Report) { r.Results[0].Seconds = -2 }, "not a duration"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			run := tasksRun("r.json", steady())
			c.change(&run.Report)
			data, err := json.Marshal(run.Report)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadReport("r.json", bytes.NewReader(data))
			if !errors.Is(err, ErrReport) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "r.json") {
				t.Errorf("err %v, want ErrReport naming r.json and saying %q", err, c.want)
			}
		})
	}
	if _, err := ReadReport("x.json", strings.NewReader("{")); !errors.Is(err, ErrReport) {
		t.Errorf("truncated JSON: %v", err)
	}
}

func TestReadGivesWhatWasWritten(t *testing.T) {
	run := tasksRun("r.json", steady())
	data, _ := json.Marshal(run.Report)
	got, err := ReadReport("r.json", bytes.NewReader(data))
	if err != nil || !reflect.DeepEqual(got.Report.Results, run.Report.Results) {
		t.Fatalf("read back: %v", err)
	}
	sc := mustBuild(t, got)
	out, _ := json.Marshal(sc)
	back, err := ReadScorecard("s.json", bytes.NewReader(out))
	if err != nil || !reflect.DeepEqual(back, sc) {
		t.Errorf("scorecard read back differs: %v", err)
	}
	if _, err := ReadScorecard("r.json", bytes.NewReader(data)); !errors.Is(err, ErrScorecard) || !strings.Contains(err.Error(), "r.json is a suite report") {
		t.Errorf("a report as a scorecard: %v", err)
	}
	if _, err := ReadReport("s.json", bytes.NewReader(out)); !errors.Is(err, ErrReport) || !strings.Contains(err.Error(), "is a scorecard") {
		t.Errorf("a scorecard as a report: %v", err)
	}
}

func TestQuantile(t *testing.T) {
	for _, c := range []struct {
		vs   []float64
		q    float64
		want float64
	}{
		{[]float64{3, 1, 2}, 0.5, 2}, {[]float64{4, 1, 3, 2}, 0.5, 2.5}, {[]float64{7}, 0.9, 7},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9}, {[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9, 10},
	} {
		if got, ok := quantile(c.vs, c.q); !ok || got != c.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", c.vs, c.q, got, c.want)
		}
	}
	if _, ok := quantile(nil, 0.5); ok {
		t.Error("quantile of nothing")
	}
}
