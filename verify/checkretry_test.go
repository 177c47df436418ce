package verify

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
)

// stalling is the scripted adapter on a machine too busy for the head's
// first run: the head's suite times out stallFor times, then runs.
type stalling struct {
	scripted
	stallFor int
	mu       sync.Mutex
	deadline []time.Duration // the deadlines the head's runs were given
}

func (s *stalling) RunSuite(ctx context.Context, r sandbox.Runner, dir string, units []string, timeout time.Duration) (SuiteResult, error) {
	res, err := s.scripted.RunSuite(ctx, r, dir, units, timeout)
	if dir != "head" {
		return res, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline = append(s.deadline, timeout)
	if len(s.deadline) <= s.stallFor {
		for i := range res.Results {
			res.Results[i].Outcome = Timeout
			res.Results[i].Detail = "killed at the deadline"
		}
	}
	return res, err
}

// TestGateRetriesATimedOutRunOnce: a run that times out is run once more
// with a longer deadline; when it then passes the verdict is the one at
// rest, and when it times out again the verdict is error (timed out on
// the head), naming the run, both deadlines and the load.
func TestGateRetriesATimedOutRunOnce(t *testing.T) {
	base := scripted{hinted: []Test{{Language: "fake", Package: ".", File: "x_test", Name: "A"}},
		pristine: outcomes("B", Pass), base: outcomes("A", Fail, "B", Pass), head: outcomes("A", Pass, "B", Pass), old: outcomes("B", Pass)}
	cfg := config.Default()
	cfg.Gate.SuiteTimeout = config.Duration{Duration: time.Minute}
	for _, tc := range []struct {
		stallFor int
		want     Verdict
	}{{0, Verified}, {1, Verified}, {2, Error}} {
		a := &stalling{scripted: base, stallFor: tc.stallFor}
		g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{a}}
		rep, err := g.Check(context.Background(), codeAndTestChange(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != tc.want {
			t.Fatalf("head stalls %d times: verdict %s, want %s; reasons %v", tc.stallFor, rep.Verdict, tc.want, rep.Reasons)
		}
		runs := min(tc.stallFor, 1) + 1
		if len(a.deadline) != runs {
			t.Fatalf("head stalls %d times: the head ran %d times, want %d", tc.stallFor, len(a.deadline), runs)
		}
		if a.deadline[0] < time.Minute {
			t.Errorf("first deadline %s: below the configured suite_timeout", a.deadline[0])
		}
		if runs == 2 && a.deadline[1] < 3*a.deadline[0] {
			t.Errorf("retry deadline %s, want at least three times the first (%s)", a.deadline[1], a.deadline[0])
		}
		if tc.want != Error {
			continue
		}
		if !hasCode(rep, ReasonTimeoutOnHead) {
			t.Fatalf("reasons %v, want %s", rep.Reasons, ReasonTimeoutOnHead)
		}
		for _, r := range rep.Reasons {
			if r.Code == ReasonTimeoutOnHead && !(strings.Contains(r.Message, "the head's suite run timed out twice") && strings.Contains(r.Message, "on retry") && strings.Contains(r.Message, "CPUs")) {
				t.Errorf("reason %q does not name the run, its deadlines and the load", r.Message)
			}
		}
	}
}

// TestUnfinishedEvidenceLeavesTheVerdict: mutation evidence that cannot
// finish keeps the verdict the tests gave and says what it did not
// establish.
func TestUnfinishedEvidenceLeavesTheVerdict(t *testing.T) {
	s := scripted{hinted: []Test{{Language: "fake", Package: ".", File: "x_test", Name: "A"}},
		pristine: outcomes("B", Pass), base: outcomes("A", Fail, "B", Pass), head: outcomes("A", Pass, "B", Pass), old: outcomes("B", Pass)}
	g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s}}
	g.Evidence = func(context.Context, sandbox.Runner, string, *Change, []Test) (*MutationSummary, error) {
		return nil, errors.New("the python baseline timed out twice: after 5m0s, then after 15m0s on retry (load 90.0 on 2 CPUs)")
	}
	rep, err := g.Check(context.Background(), codeAndTestChange(), config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Verified {
		t.Fatalf("verdict %s, want verified (the tests' verdict); reasons %v", rep.Verdict, rep.Reasons)
	}
	if rep.Mutants == nil || !strings.Contains(rep.Mutants.Note, "established nothing") || !strings.Contains(rep.Mutants.Note, "timed out twice") {
		t.Fatalf("mutation summary %+v: want a note saying what was not established and why", rep.Mutants)
	}
}
