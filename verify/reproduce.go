package verify

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/config"
)

// Reproduction is what running a task's --reproduce tests on the base
// showed: which tests ran, and which failed in every run (the oracle to
// pin), passed, disagreed between runs, or could not run.
type Reproduction struct {
	// Ran is every selected test ID that reported, in order.
	Ran []string `json:"ran"`
	// Failing are the tests that failed by assertion in every run.
	Failing []Test `json:"failing,omitempty"`
	// Passing, Flaky and Broken name test IDs (Broken with the outcome:
	// "go:./x:TestY: build_error").
	Passing []string `json:"passing,omitempty"`
	Flaky   []string `json:"flaky,omitempty"`
	Broken  []string `json:"broken,omitempty"`
	// Runs is how many times each selected test ran (gate.flake_runs).
	Runs int `json:"runs"`
}

// Reasons a reproduction pins nothing (the task's not_reproducible
// reason says which).
const (
	ReproduceNoTest  = "no_test_selected"
	ReproducePasses  = "passes_on_base"
	ReproduceFlaky   = "flaky"
	ReproduceNoBuild = "does_not_run_on_base"
)

// Refusal is why the reproduction pins no oracle, as a code and a
// sentence; "" when it pins one. Any flaky test refuses the whole: an
// oracle that fails only sometimes proves nothing when it passes.
func (r *Reproduction) Refusal() (code, message string) {
	switch {
	case len(r.Flaky) > 0:
		return ReproduceFlaky, fmt.Sprintf("flaky: %s failed in some of %d runs on the base and passed in others", listSome(r.Flaky), r.Runs)
	case len(r.Failing) > 0:
		return "", ""
	case len(r.Broken) > 0:
		return ReproduceNoBuild, fmt.Sprintf("the selected tests do not run on the base: %s", listSome(r.Broken))
	case len(r.Ran) == 0:
		return ReproduceNoTest, "the command selects no test that exists on the base"
	}
	return ReproducePasses, fmt.Sprintf("nothing to fix: %s passed on the base in all %d runs", listSome(r.Passing), r.Runs)
}

// Reproduce runs the tests selectors name on the base snapshot in dir,
// by unit, then every selected test that reported again flake_runs-1
// times, each round in its own process, as the gate repeats its
// fail-to-pass candidates. A Go selector's Name is a `go test -run`
// pattern; a Python selector's Name is a pytest node name within its
// file, or "" for every test of the file.
func (g *Gate) Reproduce(ctx context.Context, dir string, selectors []Test, cfg config.Config) (*Reproduction, error) {
	rep := &Reproduction{Ran: []string{}, Runs: cfg.Gate.FlakeRuns}
	runs := map[string][]TestResult{}
	var order []Test
	for lang, sels := range groupByLanguage(selectors) {
		a := g.adapter(lang)
		if a == nil {
			return nil, fmt.Errorf("reproduce: no %s adapter", lang)
		}
		res, err := a.RunSuite(ctx, g.Runner, dir, selectorUnits(sels), cfg.Gate.TestTimeout.Duration)
		if err != nil {
			return nil, fmt.Errorf("reproduce: running the %s tests on the base: %w", lang, err)
		}
		for _, u := range res.Units {
			if u.Outcome != Pass && u.Unit != "" {
				rep.Broken = append(rep.Broken, fmt.Sprintf("%s: %s %s", u.Unit, u.Outcome, firstLine(u.Detail)))
			}
		}
		for _, r := range res.Results {
			r.Test.Language = lang
			if selected(sels, r.Test) {
				if _, seen := runs[r.Test.ID()]; !seen {
					order = append(order, r.Test)
				}
				runs[r.Test.ID()] = append(runs[r.Test.ID()], r)
			}
		}
	}
	if err := g.repeatSelected(ctx, dir, order, runs, cfg); err != nil {
		return nil, err
	}
	rep.sort(order, runs)
	return rep, nil
}

// repeatSelected runs the selected tests flake_runs-1 more times.
func (g *Gate) repeatSelected(ctx context.Context, dir string, tests []Test, runs map[string][]TestResult, cfg config.Config) error {
	rounds := cfg.Gate.FlakeRuns - 1
	if rounds < 1 || len(tests) == 0 {
		return nil
	}
	opts := RunOptions{Count: rounds, Timeout: cfg.Gate.TestTimeout.Duration, Separate: true}
	for lang, ts := range groupByLanguage(tests) {
		res, err := g.adapter(lang).RunTests(ctx, g.Runner, dir, ts, opts)
		if err != nil {
			return fmt.Errorf("reproduce: repeating the %s tests on the base: %w", lang, err)
		}
		collect(runs, res)
	}
	return nil
}

// sort folds each test's runs into the reproduction.
func (r *Reproduction) sort(order []Test, runs map[string][]TestResult) {
	for _, t := range order {
		id := t.ID()
		r.Ran = append(r.Ran, id)
		all := runs[id]
		switch s := summarize(all); {
		case s.Outcome == Flaky:
			r.Flaky = append(r.Flaky, id)
		case s.Outcome == Pass || s.Outcome == Skip:
			r.Passing = append(r.Passing, id)
		case s.Outcome == Fail && allOutcome(all, Fail):
			r.Failing = append(r.Failing, t)
		default:
			r.Broken = append(r.Broken, fmt.Sprintf("%s: %s", id, s.Outcome))
		}
	}
	sort.Slice(r.Failing, func(i, j int) bool { return r.Failing[i].ID() < r.Failing[j].ID() })
}

func allOutcome(runs []TestResult, o Outcome) bool {
	for _, r := range runs {
		if r.Outcome != o {
			return false
		}
	}
	return len(runs) > 0
}

// selectorUnits are the units the selectors live in, each once.
func selectorUnits(sels []Test) []string {
	var units []string
	seen := map[string]bool{}
	for _, s := range sels {
		if !seen[s.Package] {
			seen[s.Package] = true
			units = append(units, s.Package)
		}
	}
	return units
}

// selected reports whether one of sels names t.
func selected(sels []Test, t Test) bool {
	for _, s := range sels {
		if s.Package != t.Package {
			continue
		}
		switch {
		case s.Language == "go" && matchGoRun(s.Name, t.Name) && goRunDepth(s.Name, t.Name):
			return true
		case s.Language != "go" && (s.Name == "" || s.Name == t.Name || strings.HasPrefix(t.Name, s.Name+"::") || strings.HasPrefix(t.Name, s.Name+"[")):
			return true
		}
	}
	return false
}

// goRunDepth reports whether name is at least as deep as pattern's
// levels: go test -run TestX/neg runs TestX only to reach neg, and the
// base's run (the whole unit) gives TestX's outcome for every subtest, so
// the parent is no test the command selected.
func goRunDepth(pattern, name string) bool {
	return len(strings.Split(name, "/")) >= len(splitGoRun(pattern))
}

// matchGoRun is `go test -run pattern` on a test name: the pattern's
// slash-separated parts each match the name's part at their level
// (unanchored, as go test does); levels past the pattern's match.
func matchGoRun(pattern, name string) bool {
	pats := splitGoRun(pattern)
	parts := strings.Split(name, "/")
	for i, p := range pats {
		if i >= len(parts) {
			return true
		}
		re, err := regexp.Compile(p)
		if err != nil || !re.MatchString(parts[i]) {
			return false
		}
	}
	return true
}

// splitGoRun splits a -run pattern at the slashes outside brackets and
// parentheses, as the testing package does.
func splitGoRun(pattern string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++
		case '/':
			if depth == 0 {
				out = append(out, pattern[start:i])
				start = i + 1
			}
		}
	}
	return append(out, pattern[start:])
}
