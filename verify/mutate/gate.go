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
		return Summarize(rep, credited, o.Engines), nil
	}
}

// GateEvidenceStart is GateEvidence for the gate's EvidenceStart hook: the
// packages are prepared (listed, type-checked, built) while the gate's own
// runs go on, and the baselines and mutants run once the credited tests
// are known. Given nil credited tests, the finish cancels and cleans up.
func GateEvidenceStart(opts Options) verify.EvidenceStart {
	return func(ctx context.Context, r sandbox.Runner, headDir string, change *verify.Change) func([]verify.Test) (*verify.MutationSummary, error) {
		if opts.Reach {
			// --reach picks lines from the credited tests' coverage:
			// nothing can be prepared before they are known.
			return func(credited []verify.Test) (*verify.MutationSummary, error) {
				if credited == nil {
					return nil, nil
				}
				return GateEvidence(opts)(ctx, r, headDir, change, credited)
			}
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		var pr *Prepared
		var prepErr error
		go func() {
			defer close(done)
			o := opts
			o.Tests = nil
			pr, prepErr = Prepare(ctx, r, headDir, change, o, nil)
		}()
		return func(credited []verify.Test) (*verify.MutationSummary, error) {
			defer cancel()
			if credited == nil {
				cancel()
				<-done
				if pr != nil {
					pr.Close()
				}
				return nil, nil
			}
			<-done
			if prepErr != nil {
				return nil, prepErr
			}
			rep, err := pr.Finish(credited)
			if err != nil {
				return nil, err
			}
			return Summarize(rep, credited, opts.Engines), nil
		}
	}
}

// Summarize turns a report into the gate's mutation summary. A mutant
// counts towards CreditedKills when the test that killed it is credited,
// named as the engine of its language names killers (Engine.KillerName).
func Summarize(rep *Report, credited []verify.Test, engines []Engine) *verify.MutationSummary {
	names := map[string]bool{}
	for _, t := range credited {
		name := t.Name
		for _, e := range engines {
			if e.Language() == t.Language {
				name = e.KillerName(t)
				break
			}
		}
		names[name] = true
	}
	sum := &verify.MutationSummary{Mutants: append([]verify.Mutant{}, rep.Mutants...)}
	for _, m := range rep.Mutants {
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
