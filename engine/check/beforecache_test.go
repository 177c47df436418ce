package check_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// beforeCacheRepo is clampFixRepo (base: clamp returns x; main: the fix
// and test_outside) with a later attempt on the same base, branch attempt2:
// the same test file, the fix written another way. Its second value is the
// before snapshot of both (the base's code, the head's tests), for a
// baseRunCounter: every pytest run in a directory that holds it.
func beforeCacheRepo(t *testing.T) (*gitRepo, map[string]string) {
	testenv.SystemPytest(t)
	r := clampFixRepo(t, nil)
	before := map[string]string{}
	for p, rev := range map[string]string{"shop/clamp.py": "HEAD~1", "tests/test_clamp.py": "HEAD"} {
		out, err := testrepo.Command(r.dir, "show", rev+":"+p).Output()
		if err != nil {
			t.Fatal(err)
		}
		before[p] = string(out)
	}
	r.git("checkout", "-q", "-b", "attempt2", "HEAD~1")
	r.write(map[string]string{
		"shop/clamp.py":       "def clamp(x, lo, hi):\n    return min(max(x, lo), hi)\n",
		"tests/test_clamp.py": before["tests/test_clamp.py"],
	})
	r.commit("attempt 2")
	r.git("checkout", "-q", "main")
	return r, before
}

func flakeRuns(n int) *config.Config { c := config.Default(); c.Gate.FlakeRuns = n; return &c }

// TestBeforeResultsReusedByALaterAttempt: the first attempt runs the base
// with the head's tests once and repeats its fail-to-pass test twice
// (flake_runs 3), and stores both; a later attempt with the same tests and
// other code runs none of them, names the reuse, and reaches what a fresh
// check (--no-cache) reaches, the head's repeats included.
func TestBeforeResultsReusedByALaterAttempt(t *testing.T) {
	r, before := beforeCacheRepo(t)
	led := openLedger(t)
	runner := &baseRunCounter{Runner: host.New(), base: before}
	o := check.Options{Runner: runner, Recorder: led, Config: flakeRuns(3)}
	first := checkOn(t, r, "main~1", "main", o)
	if first.Verdict != verify.Verified || first.BeforeReused != nil || runner.runs() != 3 {
		t.Fatalf("first attempt: %s %v, reused %+v, %d runs of the base with the head's tests: want verified, 1 run and 2 repeats",
			first.Verdict, first.Reasons, first.BeforeReused, runner.runs())
	}
	later := checkOn(t, r, "main~1", "attempt2", o)
	if later.BeforeReused == nil || runner.runs() != 3 {
		t.Fatalf("a later attempt with the same tests: reused %+v, %d runs: want the stored run and repeats", later.BeforeReused, runner.runs())
	}
	if !strings.Contains(strings.Join(later.Notes, "\n"), "the run of the change's tests on the base (and its repeats) reused from") {
		t.Errorf("notes %q do not name the reuse", later.Notes)
	}
	fresh := checkOn(t, r, "main~1", "attempt2", check.Options{Runner: runner, Recorder: led, Config: flakeRuns(3), NoCache: true})
	if fresh.BeforeReused != nil || runner.runs() != 6 {
		t.Fatalf("--no-cache: reused %+v, %d runs: want the run and its repeats again", fresh.BeforeReused, runner.runs())
	}
	sameJudgement(t, later, fresh)
	for _, rep := range []*verify.Report{later, fresh} {
		for _, tr := range rep.Tests {
			if tr.Name == "test_outside" && (!tr.Credited || tr.Runs != 3) {
				t.Errorf("test_outside: credited %t after %d head runs: want credited after 3", tr.Credited, tr.Runs)
			}
		}
	}
}

// TestBeforeResultsNeverReusedAcrossTestsOrSettings: after a stored run, a
// later attempt whose test file differs, one whose flake_runs differs, one
// under another environment value and one after its row was cut in half
// each run the base with the head's tests again.
func TestBeforeResultsNeverReusedAcrossTestsOrSettings(t *testing.T) {
	r, before := beforeCacheRepo(t)
	r.git("checkout", "-q", "-b", "moretests", "main")
	moreTests := before["tests/test_clamp.py"] + "\n\ndef test_edge():\n    assert clamp(0, 0, 10) == 0\n"
	r.write(map[string]string{"tests/test_clamp.py": moreTests})
	r.commit("another test")
	r.git("checkout", "-q", "main")
	led := openLedger(t)
	runner := &baseRunCounter{Runner: host.New(), base: before}
	o := check.Options{Runner: runner, Recorder: led, Config: flakeRuns(3)}
	checkOn(t, r, "main~1", "main", o)
	corrupt := func() {
		err := led.Write(context.Background(), func(tx *sql.Tx) error {
			_, err := tx.Exec(`UPDATE base_results SET data = substr(data, 1, length(data) / 2)`)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	moreBefore := map[string]string{"shop/clamp.py": before["shop/clamp.py"], "tests/test_clamp.py": moreTests}
	misses := []struct {
		name, head string
		o          check.Options
		setup      func()
	}{
		{name: "another test file", head: "moretests", o: check.Options{Runner: &baseRunCounter{Runner: host.New(), base: moreBefore}, Recorder: led, Config: flakeRuns(3)}},
		{name: "flake_runs 5", head: "attempt2", o: check.Options{Runner: runner, Recorder: led, Config: flakeRuns(5)}},
		{name: "an environment value the tests see", head: "attempt2",
			o: check.Options{Runner: &baseRunCounter{Runner: &host.Runner{Extra: []string{"CLAMP_FLAVOUR=2"}}, base: before}, Recorder: led, Config: flakeRuns(3)}},
		{name: "a corrupt row", head: "attempt2", o: o, setup: corrupt},
	}
	for _, m := range misses {
		if m.setup != nil {
			m.setup()
		}
		counter := m.o.Runner.(*baseRunCounter)
		n := counter.runs()
		rep := checkOn(t, r, "main~1", m.head, m.o)
		if rep.BeforeReused != nil || counter.runs() == n {
			t.Errorf("%s: reused %+v, runs %d → %d: want the base with the head's tests run again", m.name, rep.BeforeReused, n, counter.runs())
		}
		if rep.Verdict != verify.Verified {
			t.Errorf("%s: %s %v", m.name, rep.Verdict, rep.Reasons)
		}
	}
}
