package score

import (
	"fmt"
	"sort"
	"time"

	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/verify"
)

// Build scores one or more runs of the same suite, made the same way
// (model, budgets, task definitions and set, bcode build); it refuses to
// mix others, wrapping bench.ErrNotComparable and naming the difference.
func Build(runs []Run) (Scorecard, error) {
	if len(runs) == 0 {
		return Scorecard{}, fmt.Errorf("%w: no reports to score", ErrReport)
	}
	if err := distinctRuns(runs); err != nil {
		return Scorecard{}, err
	}
	basis := basisOf(runs[0])
	for _, r := range runs[1:] {
		b := basisOf(r)
		if d := difference(basis, b, runs[0].Name, r.Name); d != "" {
			return Scorecard{}, fmt.Errorf("%w: %s", bench.ErrNotComparable, d)
		}
		if b.Bcode != basis.Bcode {
			return Scorecard{}, fmt.Errorf("%w: %s was run by bcode %q, %s by %q: a scorecard measures one build", bench.ErrNotComparable, runs[0].Name, basis.Bcode, r.Name, b.Bcode)
		}
	}
	trials := trialsOf(runs)
	basis.Reports, basis.Trials = len(runs), len(trials)
	tasks := map[string]bench.Task{}
	for _, t := range runs[0].Report.Tasks {
		tasks[t.ID] = t
	}
	sc := Scorecard{Format: Format, Basis: basis, Figures: figures(trials)}
	if err := sc.addRates(trials, tasks); err != nil {
		return Scorecard{}, err
	}
	sc.addTasks(trials, tasks)
	sc.Limitations = limitations(runs, sc.Errors)
	return sc, nil
}

// distinctRuns refuses the same run given twice (the same file, or a
// copy): its trials would count twice and narrow every interval.
func distinctRuns(runs []Run) error {
	started := map[time.Time]string{}
	for _, r := range runs {
		s := r.Report.Started
		if s.IsZero() {
			continue
		}
		if first, ok := started[s]; ok {
			return fmt.Errorf("%w: %s and %s are the same run (started %s): its trials would count twice", ErrReport, first, r.Name, s.Format(time.RFC3339))
		}
		started[s] = r.Name
	}
	return nil
}

// trial is one pass over a suite's tasks: one trial number of one report.
type trial []bench.Result

// trialsOf is every run's trials, in the runs' order and then by trial
// number.
func trialsOf(runs []Run) []trial {
	var out []trial
	for _, r := range runs {
		byNumber := map[int]trial{}
		for _, res := range r.Report.Results {
			byNumber[res.Trial] = append(byNumber[res.Trial], res)
		}
		numbers := make([]int, 0, len(byNumber))
		for n := range byNumber {
			numbers = append(numbers, n)
		}
		sort.Ints(numbers)
		for _, n := range numbers {
			out = append(out, byNumber[n])
		}
	}
	return out
}

// addRates counts success, and for the verify suite false acceptance
// and false rejection, over every trial.
func (sc *Scorecard) addRates(trials []trial, tasks map[string]bench.Task) error {
	success, fa, fr := newTally(), newTally(), newTally()
	for _, tr := range trials {
		for _, res := range tr {
			t := tasks[res.Task]
			success.add(t, res.Outcome == bench.Pass)
			if sc.Basis.Suite != bench.SuiteVerify || res.Verdict == "" {
				continue
			}
			if t.Label == verify.Verified {
				fr.add(t, res.Verdict != verify.Verified)
			} else {
				fa.add(t, res.Verdict == verify.Verified)
			}
		}
	}
	var err error
	if sc.Success, err = success.breakdown(); err != nil {
		return err
	}
	if sc.Basis.Suite != bench.SuiteVerify {
		return nil
	}
	a, err := fa.breakdown()
	if err != nil {
		return err
	}
	r, err := fr.breakdown()
	sc.FalseAcceptance, sc.FalseRejection = &a, &r
	return err
}

// addTasks scores each task, the flaky ones, security and errors.
func (sc *Scorecard) addTasks(trials []trial, tasks map[string]bench.Task) {
	byID := map[string]*TaskScore{}
	for _, id := range sc.Basis.Tasks {
		t := tasks[id]
		byID[id] = &TaskScore{ID: id, Group: t.Group, Language: t.Language, Split: t.Split}
	}
	for _, tr := range trials {
		for _, res := range tr {
			ts := byID[res.Task]
			switch res.Outcome {
			case bench.Pass:
				ts.Passes++
			case bench.Fail:
				ts.Fails++
			default:
				ts.Errors++
				sc.Errors++
			}
			if res.Leaks > 0 {
				sc.Security.Failures++
			}
			sc.Security.Attempts += res.SecurityAttempts
		}
	}
	sc.Flaky = []string{}
	for _, id := range sc.Basis.Tasks {
		ts := *byID[id]
		sc.Tasks = append(sc.Tasks, ts)
		if ts.Passes > 0 && ts.Passes < ts.Trials() {
			sc.Flaky = append(sc.Flaky, id)
		}
	}
}

// limitations are the reports' own, the tasks they skipped and why, and
// what the scorecard itself cannot show.
func limitations(runs []Run, errors int) []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if runs[0].Report.Model.Scripted() {
		add("scripted model: the runs replay reference solutions, so they test the harness, the grading and the gate, not a model")
	}
	for _, r := range runs {
		for _, l := range r.Report.Limitations {
			add(l)
		}
		for _, s := range r.Report.Skipped {
			add(fmt.Sprintf("task %s skipped: %s", s.Task, s.Reason))
		}
	}
	if errors > 0 {
		add(fmt.Sprintf("%d trials could not be graded (outcome error); they count as not passing", errors))
	}
	return out
}
