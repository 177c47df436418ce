package verify

import (
	"sort"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// sideSpec is one snapshot's run as runSides makes it: where it runs,
// what, its configured timeout (the floor of its deadline), and the run
// of the other side whose measured time bounds its retry's deadline.
type sideSpec struct {
	name          string
	run           **sideRun
	dir           string
	targets, keep map[string][]string
	floor         time.Duration
	other         **sideRun
}

// sideSpecs are the five runs, in the order runSides starts them: the
// base and the head whole (suite_timeout), the mixed snapshots their
// candidate units (test_timeout). Each side's other is the run of the
// same tests on the other side of the change: base and head of each
// other, the snapshots with the head's tests of the head, the head with
// the base's tests of the base.
func (r *checkRun) sideSpecs() []sideSpec {
	suite, test := r.cfg.Gate.SuiteTimeout.Duration, r.cfg.Gate.TestTimeout.Duration
	// A base read from BaseResults has its dir cleared in its run slot
	// (runSides): neither run nor retried.
	baseDir := r.baseDir
	return []sideSpec{
		{name: "before", run: &r.before, dir: r.beforeDir, targets: r.units, keep: r.keep, floor: test, other: &r.head},
		{name: "head", run: &r.head, dir: r.headDir, targets: r.fullTargets, keep: r.keep, floor: suite, other: &r.base},
		{name: "base", run: &r.base, dir: baseDir, targets: r.fullTargets, floor: suite, other: &r.head},
		{name: "old", run: &r.old, dir: r.oldDir, targets: r.oldTargets, floor: test, other: &r.base},
		{name: "support", run: &r.supp, dir: r.supportDir, targets: r.units, floor: test, other: &r.head},
	}
}

// sideNames say which run a timeout detail names.
var sideNames = map[string]string{
	"before":  "the run of the change's tests on the base",
	"head":    "the head's suite run",
	"base":    "the base's suite run",
	"old":     "the run of the base's tests on the head",
	"support": "the run of the head's tests with the base's test support",
}

// retryTimeouts runs every side whose run timed out once more, all of it,
// with a longer deadline: three times the first, and at least what the
// other side's measured run of the same tests and the load now ask
// (Load.RetryDeadline). A timeout on a busy machine is the machine's, not
// the change's; one that repeats with the longer deadline is a result,
// and its detail names the run, both deadlines and the load.
func (r *checkRun) retryTimeouts(specs []sideSpec) {
	var again []sideSpec
	for _, sp := range specs {
		if sp.dir != "" && (*sp.run).timedOut() {
			again = append(again, sp)
		}
	}
	if len(again) == 0 || r.ctx.Err() != nil {
		return
	}
	l := sandbox.ReadLoad()
	r.retried = map[string]bool{}
	for _, sp := range again {
		r.retried[sp.name] = true
	}
	r.p.Step("running again, with a longer deadline, %d runs that timed out (%s)", len(again), l)
	fns := make([]func(), len(again))
	for i, sp := range again {
		// The deadlines come from the first runs, all read here before any
		// retry starts: a retry running beside this one writes its side,
		// and the deadline must not depend on which finished first.
		first := r.load.Deadline(sp.floor, 0)
		var measured time.Duration
		if o := *sp.other; o != nil && !o.timedOut() {
			measured = o.duration
		}
		retry := l.RetryDeadline(first, sp.floor, measured)
		fns[i] = r.timed("retry_"+sp.name, func() {
			res := r.g.runSide(r.ctx, sp.dir, sp.targets, sp.keep, retry)
			res.explainTimeouts(TimeoutDetail(sideNames[sp.name], first, retry, l))
			*sp.run = res
		})
	}
	parallel(sides(), fns...)
}

// timedOut reports whether any test or unit of the side timed out.
func (s *sideRun) timedOut() bool {
	if s == nil {
		return false
	}
	for _, res := range s.results {
		if res.Outcome == Timeout {
			return true
		}
	}
	for _, u := range s.units {
		if u.Outcome == Timeout {
			return true
		}
	}
	return false
}

// explainTimeouts puts why in front of every timeout's detail.
func (s *sideRun) explainTimeouts(why string) {
	for id, res := range s.results {
		if res.Outcome == Timeout {
			res.Detail = why + ": " + res.Detail
			s.results[id] = res
		}
	}
	for k, u := range s.units {
		if u.Outcome == Timeout {
			u.Detail = why + ": " + u.Detail
			s.units[k] = u
		}
	}
}

// headTimeouts are the tests that passed on the base and time out on the
// head, and the head's new tests that time out, by display name, with
// their details.
func headTimeouts(base, head *sideRun) map[string]string {
	out := map[string]string{}
	for _, id := range base.order {
		if b := base.results[id]; b.Outcome == Pass {
			if h := head.outcome(b.Test); h.Outcome == Timeout {
				out[displayName(b.Test)] = h.Detail
			}
		}
	}
	for _, id := range head.order {
		if h := head.results[id]; h.Outcome == Timeout {
			if _, ok := base.results[id]; !ok {
				out[displayName(h.Test)] = h.Detail
			}
		}
	}
	return out
}

// onlyTimeouts reports whether everything that fails on the head timed
// out there, twice (retryTimeouts): then the gate cannot tell a hang the
// change brought from a machine too busy for the deadline, and does not
// decide.
func onlyTimeouts(rep *Report, in verdictInputs, p2pFailed bool) bool {
	if !(in.headFails || p2pFailed) || len(in.headBroken) > 0 {
		return false
	}
	timedOut := 0
	for _, t := range rep.Tests {
		switch t.Reason {
		case ReasonFailsOnHead, ReasonNoBuildOnHead:
			return false
		case ReasonTimeoutOnHead:
			timedOut++
		}
	}
	if rep.PassToPass != nil {
		for _, name := range rep.PassToPass.Failed {
			if _, ok := in.headTimeouts[name]; !ok {
				return false
			}
			timedOut++
		}
	}
	return timedOut > 0
}

// decideTimedOut makes the verdict error: the tests that timed out on the
// head, each with the run, its deadlines and the load.
func decideTimedOut(rep *Report, timeouts map[string]string) {
	rep.Verdict = Error
	seen := map[string]bool{}
	for _, t := range rep.Tests {
		if t.Reason == ReasonTimeoutOnHead {
			seen[t.Name] = true
			addReason(rep, ReasonTimeoutOnHead, t.Name+" "+t.ReasonText+": "+firstLine(t.HeadDetail))
		}
	}
	names := make([]string, 0, len(timeouts))
	for n := range timeouts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !seen[n] {
			addReason(rep, ReasonTimeoutOnHead, n+" "+reasonText[ReasonTimeoutOnHead]+": "+firstLine(timeouts[n]))
		}
	}
}
