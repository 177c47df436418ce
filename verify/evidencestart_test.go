package verify

import (
	"context"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
)

// EvidenceStart gives the verdicts Evidence gives: the evidence started
// beside the runs is finished with the credited tests when the gate wants
// it, and abandoned (finished with nil) when it does not; it is started at
// most once and finished exactly once.
func TestEvidenceStartMatchesEvidence(t *testing.T) {
	tA := Test{Language: "fake", Package: ".", File: "x_test", Name: "A"}
	change := codeAndTestChange()
	o := outcomes
	survived := &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "survived"}}, Survived: 1}
	killed := &MutationSummary{Mutants: []Mutant{{ID: "m", Verdict: "killed", KilledBy: "A"}}, CreditedKills: 1}
	cases := []struct {
		name     string
		s        scripted
		ev       *MutationSummary
		want     Verdict
		evidence bool // the gate wants evidence
	}{
		{name: "verified, credited kill", s: scripted{hinted: []Test{tA}, pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Pass)}, ev: killed, want: Verified, evidence: true},
		{name: "green, survivor", s: scripted{hinted: []Test{tA}, pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Pass)}, ev: survived, want: Green, evidence: true},
		{name: "failed on the head: abandoned", s: scripted{hinted: []Test{tA}, pristine: o(), base: o("A", Fail), head: o("A", Fail), old: o()}, ev: killed, want: Failed},
		{name: "nothing credited: abandoned", s: scripted{hinted: []Test{tA}, pristine: o(), base: o("A", Pass), head: o("A", Pass), old: o()}, ev: killed, want: Green},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Evidence.MaxSurvivors = -1
			s1 := c.s
			g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s1}}
			ev := c.ev
			g.Evidence = func(context.Context, sandbox.Runner, string, *Change, []Test) (*MutationSummary, error) {
				return ev, nil
			}
			before, err := g.Check(context.Background(), change, cfg)
			if err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			starts, finishes := 0, 0
			var got []Test
			s2 := c.s
			g = &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s2}}
			g.EvidenceStart = func(_ context.Context, _ sandbox.Runner, headDir string, _ *Change) func([]Test) (*MutationSummary, error) {
				mu.Lock()
				starts++
				mu.Unlock()
				if headDir != "head" {
					t.Errorf("evidence started on %q, want the head snapshot", headDir)
				}
				return func(credited []Test) (*MutationSummary, error) {
					mu.Lock()
					defer mu.Unlock()
					finishes++
					got = credited
					if credited == nil {
						return nil, nil
					}
					return ev, nil
				}
			}
			after, err := g.Check(context.Background(), change, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if before.Verdict != c.want || after.Verdict != c.want {
				t.Fatalf("verdicts: Evidence %s, EvidenceStart %s, want %s", before.Verdict, after.Verdict, c.want)
			}
			if starts != 1 || finishes != 1 {
				t.Fatalf("started %d times, finished %d times; want once each", starts, finishes)
			}
			if c.evidence != (got != nil) {
				t.Fatalf("finished with %v; want the credited tests: %v", got, c.evidence)
			}
			if c.evidence && (len(got) != 1 || got[0].Name != "A") {
				t.Fatalf("finished with %v, want the credited test A", got)
			}
		})
	}
}
