package mutate

import (
	"context"
	"fmt"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// GateEvidence adapts Run to the gate's Evidence hook: it mutates the
// change's head snapshot and reports every mutant's verdict and how many of
// them a credited test killed. A change with no mutable code gets a summary
// that says so (a Note, no mutants) rather than a failure.
func GateEvidence(opts Options) verify.Evidence {
	return func(ctx context.Context, r sandbox.Runner, headDir string, change *verify.Change, credited []verify.Test) (*verify.MutationSummary, error) {
		o := opts
		o.Tests = credited
		rep, err := Run(ctx, r, headDir, change, o, nil)
		if err != nil {
			return nil, err
		}
		return Summarize(rep, credited), nil
	}
}

// Summarize turns a report into the gate's mutation summary. A mutant
// counts towards CreditedKills when the test that killed it is credited.
func Summarize(rep *Report, credited []verify.Test) *verify.MutationSummary {
	names := map[string]bool{}
	for _, t := range credited {
		if t.Language == "python" {
			// Python kills are named file::name, as pytest's node IDs.
			f := t.File
			if f == "" {
				f = t.Package
			}
			names[f+"::"+t.Name] = true
			continue
		}
		names[topLevel(t.Name)] = true
	}
	sum := &verify.MutationSummary{Mutants: []verify.MutantVerdict{}}
	for _, m := range rep.Mutants {
		sum.Mutants = append(sum.Mutants, verify.MutantVerdict{
			ID: m.ID, File: m.File, Line: m.Line, Operator: m.Operator,
			Original: m.Original, Mutated: m.Mutated, Verdict: string(m.Verdict), KilledBy: m.KilledBy,
		})
		switch m.Verdict {
		case Survived:
			sum.Survived++
		case Killed:
			if names[m.KilledBy] {
				sum.CreditedKills++
			}
		}
	}
	if len(rep.Mutants) == 0 {
		sum.Note = "the changed lines have no mutable code"
		if rep.Stats.Pruned > 0 {
			sum.Note = fmt.Sprintf("the changed lines have no mutable code (%d mutants pruned: they cannot build or cannot differ)", rep.Stats.Pruned)
		}
	}
	return sum
}
