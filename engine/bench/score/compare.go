package score

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/engine/bench"
)

// basisOf is what a run was made from; Reports and Trials are the
// caller's to add up.
func basisOf(r Run) Basis {
	rep := r.Report
	ids := map[string]bool{}
	for _, res := range rep.Results {
		ids[res.Task] = true
	}
	b := Basis{
		Suite: rep.Suite, Model: rep.Model, Budgets: rep.Budgets, TasksHash: rep.TasksHash,
		Fixtures: map[string]string{}, Bcode: rep.Bcode,
	}
	for id := range ids {
		b.Tasks = append(b.Tasks, id)
		if h, ok := rep.Fixtures[id]; ok {
			b.Fixtures[id] = h
		}
	}
	sort.Strings(b.Tasks)
	return b
}

// Comparable says why a candidate scorecard cannot be compared with a
// baseline, wrapping bench.ErrNotComparable, or returns nil. Their bcode
// builds may differ: that is what the gate compares.
func Comparable(baseline, candidate Basis) error {
	if d := difference(baseline, candidate, "the baseline", "the candidate"); d != "" {
		return fmt.Errorf("%w: %s", bench.ErrNotComparable, d)
	}
	return nil
}

// difference names the first way two bases differ beyond the bcode
// build and the number of reports and trials, "" when none does; an and
// bn name them.
func difference(a, b Basis, an, bn string) string {
	switch {
	case a.Suite != b.Suite:
		return fmt.Sprintf("%s is of suite %s, %s of suite %s", an, a.Suite, bn, b.Suite)
	case a.Model.Scripted() != b.Model.Scripted():
		return fmt.Sprintf("one is from the scripted model, the other from a model (%s): a scripted run says nothing about a model's", modelName(a.Model, b.Model))
	case a.Model != b.Model:
		return fmt.Sprintf("the models differ: %s ran %s, %s ran %s", an, modelName(a.Model), bn, modelName(b.Model))
	case a.Budgets != b.Budgets:
		return fmt.Sprintf("the budgets differ (%s against %s): %s", an, bn, budgetsDifference(a.Budgets, b.Budgets))
	case a.TasksHash != b.TasksHash:
		return fmt.Sprintf("the task definitions differ: %s's tasks hash is %s, %s's %s", an, short(a.TasksHash), bn, short(b.TasksHash))
	}
	if d := setDifference(a.Tasks, b.Tasks, an, bn); d != "" {
		return "the task sets differ: " + d
	}
	for _, id := range a.Tasks {
		if a.Fixtures[id] != b.Fixtures[id] {
			return fmt.Sprintf("task %s's fixture differs: %s has %s, %s %s", id, an, short(a.Fixtures[id]), bn, short(b.Fixtures[id]))
		}
	}
	return ""
}

// modelName names the first of models that is not scripted.
func modelName(models ...bench.Model) string {
	for _, m := range models {
		if !m.Scripted() {
			return ModelName(m)
		}
	}
	return ModelName(models[0])
}

// ModelName names a model in a report's own terms: its kind, name,
// endpoint or file, digest and server build.
func ModelName(m bench.Model) string {
	var parts []string
	for _, p := range []string{m.Kind, m.Name, m.Endpoint, m.File} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if m.SHA256 != "" {
		parts = append(parts, "sha256 "+short(m.SHA256))
	}
	if m.Server != "" {
		parts = append(parts, "server "+m.Server)
	}
	if len(parts) == 0 {
		return "(unnamed)"
	}
	return strings.Join(parts, " ")
}

func budgetsDifference(a, b bench.Budgets) string {
	var d []string
	if a.Attempts != b.Attempts {
		d = append(d, fmt.Sprintf("attempts %d against %d", a.Attempts, b.Attempts))
	}
	if a.WallClock != b.WallClock {
		d = append(d, fmt.Sprintf("wall clock %s against %s", a.WallClock, b.WallClock))
	}
	if a.Tokens != b.Tokens {
		d = append(d, fmt.Sprintf("tokens %d against %d", a.Tokens, b.Tokens))
	}
	if a.Escalations != b.Escalations {
		d = append(d, fmt.Sprintf("escalations %d against %d", a.Escalations, b.Escalations))
	}
	return strings.Join(d, ", ")
}

// setDifference says which ids only one of two sorted sets holds.
func setDifference(a, b []string, an, bn string) string {
	in := func(set []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range set {
			m[s] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var onlyA, onlyB []string
	for _, s := range a {
		if !inb[s] {
			onlyA = append(onlyA, s)
		}
	}
	for _, s := range b {
		if !ina[s] {
			onlyB = append(onlyB, s)
		}
	}
	var d []string
	if len(onlyA) > 0 {
		d = append(d, fmt.Sprintf("only %s ran %s", an, strings.Join(onlyA, ", ")))
	}
	if len(onlyB) > 0 {
		d = append(d, fmt.Sprintf("only %s ran %s", bn, strings.Join(onlyB, ", ")))
	}
	return strings.Join(d, "; ")
}

// short is a hash's first 12 characters, or "none".
func short(h string) string {
	switch {
	case h == "":
		return "none"
	case len(h) > 12:
		return h[:12]
	}
	return h
}
