package score

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/bcode-dev/bcode/engine/bench"
)

// Run is one suite report and where it was read from, the name the
// errors give.
type Run struct {
	Name   string
	Report bench.Report
}

// ReadReport reads a suite report's JSON. A scorecard given in its place
// is refused with what to do instead.
func ReadReport(name string, r io.Reader) (Run, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Run{}, fmt.Errorf("%w: %s: %v", ErrReport, name, err)
	}
	var probe struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.Format == Format {
		return Run{}, fmt.Errorf("%w: %s is a scorecard, not a suite report", ErrReport, name)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return Run{}, fmt.Errorf("%w: %s: %v", ErrReport, name, err)
	}
	run := Run{Name: name, Report: rep}
	if err := run.validate(); err != nil {
		return Run{}, err
	}
	return run, nil
}

// validate refuses a report no run writes: results a scorecard would
// miscount rather than score.
func (r Run) validate() error {
	rep := r.Report
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrReport, r.Name, fmt.Sprintf(format, a...))
	}
	if rep.Suite != bench.SuiteVerify && rep.Suite != bench.SuiteTasks {
		return bad("suite %q is neither %q nor %q", rep.Suite, bench.SuiteVerify, bench.SuiteTasks)
	}
	if len(rep.Results) == 0 {
		return bad("no results")
	}
	tasks := map[string]bool{}
	for _, t := range rep.Tasks {
		if t.ID == "" || tasks[t.ID] {
			return bad("task id %q is empty or defined twice", t.ID)
		}
		if rep.Suite == bench.SuiteVerify && t.Label == "" {
			return bad("task %s of the verify suite has no label to grade its verdict by", t.ID)
		}
		tasks[t.ID] = true
	}
	seen := map[string]map[int]bool{}
	for i, res := range rep.Results {
		if err := validResult(res, tasks); err != nil {
			return bad("results[%d]: %v", i, err)
		}
		if seen[res.Task] == nil {
			seen[res.Task] = map[int]bool{}
		}
		if seen[res.Task][res.Trial] {
			return bad("task %s has two results for trial %d", res.Task, res.Trial)
		}
		seen[res.Task][res.Trial] = true
	}
	trials, err := everyTrialHasEveryTask(seen, bad)
	if err == nil && rep.Trials > 0 && trials != rep.Trials {
		err = bad("it says %d trials, its results hold %d", rep.Trials, trials)
	}
	return err
}

func validResult(res bench.Result, tasks map[string]bool) error {
	switch {
	case !tasks[res.Task]:
		return fmt.Errorf("task %q is not among the report's tasks", res.Task)
	case res.Outcome != bench.Pass && res.Outcome != bench.Fail && res.Outcome != bench.Error:
		return fmt.Errorf("task %s: outcome %q is not pass, fail or error", res.Task, res.Outcome)
	case res.Trial < 0:
		return fmt.Errorf("task %s: trial %d is negative", res.Task, res.Trial)
	case res.Seconds < 0 || math.IsNaN(res.Seconds) || math.IsInf(res.Seconds, 0):
		return fmt.Errorf("task %s: seconds %v is not a duration", res.Task, res.Seconds)
	case res.Tokens < 0 || res.ModelCalls < 0 || res.SecurityAttempts < 0 || res.Leaks < 0 || res.ServerRSS < 0:
		return fmt.Errorf("task %s: a negative count", res.Task)
	}
	return nil
}

// everyTrialHasEveryTask refuses a report where a task that ran lacks a
// result in one of the trials: its rates would silently leave it out.
// It returns how many trials there are.
func everyTrialHasEveryTask(seen map[string]map[int]bool, bad func(string, ...any) error) (int, error) {
	trials := map[int]bool{}
	for _, ts := range seen {
		for t := range ts {
			trials[t] = true
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, t := range sortedKeys(trials) {
			if !seen[id][t] {
				return 0, bad("task %s has no result for trial %d", id, t)
			}
		}
	}
	return len(trials), nil
}

func sortedKeys(m map[int]bool) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// ReadScorecard reads a scorecard's JSON (bcode bench scorecard --out).
// A suite report given in its place is refused with what to do instead.
func ReadScorecard(name string, r io.Reader) (Scorecard, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Scorecard{}, fmt.Errorf("%w: %s: %v", ErrScorecard, name, err)
	}
	var probe struct {
		Format  string            `json:"format"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return Scorecard{}, fmt.Errorf("%w: %s: %v", ErrScorecard, name, err)
	}
	switch {
	case probe.Format == "" && probe.Results != nil:
		return Scorecard{}, fmt.Errorf("%w: %s is a suite report, not a scorecard: make one with bcode bench scorecard %s --out FILE", ErrScorecard, name, name)
	case probe.Format != Format:
		return Scorecard{}, fmt.Errorf("%w: %s: format %q, want %q", ErrScorecard, name, probe.Format, Format)
	}
	var sc Scorecard
	if err := json.Unmarshal(data, &sc); err != nil {
		return Scorecard{}, fmt.Errorf("%w: %s: %v", ErrScorecard, name, err)
	}
	if len(sc.Basis.Tasks) == 0 || sc.Basis.Trials < 1 || sc.Basis.Suite == "" {
		return Scorecard{}, fmt.Errorf("%w: %s: no suite, tasks or trials in its basis", ErrScorecard, name)
	}
	return sc, nil
}
