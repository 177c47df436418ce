package score

import (
	"fmt"
	"math"
)

// figureFinding: a figure regresses when it is worse (higher) than the
// baseline's by more than the tolerance, widened to the baseline's own
// spread across trials (its per-trial max minus min) when that is
// larger: a baseline that varies that much between its own trials says
// no less precise a change can be seen. ok is false when neither side
// measured the figure.
func figureFinding(name string, r FigureRule, base, cand map[string]Figure) (Finding, bool) {
	b, inBase := base[name]
	c, inCand := cand[name]
	f := Finding{Rule: FigureLabel(name), Baseline: "not measured", Candidate: "not measured", Verdict: OK}
	if inBase {
		f.Baseline = showFigure(name, b)
	}
	if inCand {
		f.Candidate = showFigure(name, c)
	}
	switch {
	case !inBase && !inCand:
		return f, false
	case !inCand:
		f.Verdict, f.Why = Warn, "the candidate did not measure it"
		return f, true
	case !inBase:
		f.Why = "the baseline did not measure it: nothing to compare"
		return f, true
	}
	allowed, because := r.Tolerance*math.Abs(b.Value), fmt.Sprintf("the %.0f%% tolerance", 100*r.Tolerance)
	if s := b.Max - b.Min; s > allowed {
		allowed, because = s, "the baseline's spread"
	}
	worse := c.Value - b.Value
	regressed := worse > allowed+1e-12
	f.Verdict = verdict(regressed, r.Blocking)
	change := FigureValue(name, math.Abs(worse))
	switch {
	case worse == 0:
		f.Why = "no change"
	case worse < 0:
		f.Why = "better: down " + change
	case regressed:
		f.Why = fmt.Sprintf("up %s, beyond %s allowed by %s", change, FigureValue(name, allowed), because)
	default:
		f.Why = fmt.Sprintf("up %s, within %s allowed by %s", change, FigureValue(name, allowed), because)
	}
	return f, true
}

// figureLabel is a figure's name as tables show it.
func FigureLabel(name string) string {
	return map[string]string{
		FigureTokensPerSuccess: "tokens per success", FigureSecondsMedian: "seconds median",
		FigureSecondsP90: "seconds p90", FigureModelCalls: "model calls per task trial", FigureServerRSS: "server memory (peak)",
	}[name]
}

// showFigure is "12.3s (11.0s–13.9s)": the value and its per-trial
// range.
func showFigure(name string, f Figure) string {
	return fmt.Sprintf("%s (%s–%s)", FigureValue(name, f.Value), FigureValue(name, f.Min), FigureValue(name, f.Max))
}

// FigureValue is a figure's value in its unit: seconds, MiB, a count.
func FigureValue(name string, v float64) string {
	switch name {
	case FigureSecondsMedian, FigureSecondsP90:
		return fmt.Sprintf("%.2fs", v)
	case FigureServerRSS:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case FigureModelCalls:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// securityFinding: security failures regress on any increase, per trial
// when the two ran different numbers of trials.
func securityFinding(r CountRule, base, cand Scorecard) Finding {
	b, c := base.Security, cand.Security
	bt, ct := base.Basis.Trials, cand.Basis.Trials
	f := Finding{
		Rule:      "security failures",
		Baseline:  fmt.Sprintf("%d in %d trials, attempts %d", b.Failures, bt, b.Attempts),
		Candidate: fmt.Sprintf("%d in %d trials, attempts %d", c.Failures, ct, c.Attempts),
	}
	regressed := c.Failures*bt > b.Failures*ct
	f.Verdict = verdict(regressed, r.Blocking)
	switch {
	case regressed && bt == ct:
		f.Why = fmt.Sprintf("%d more: any increase regresses", c.Failures-b.Failures)
	case regressed:
		f.Why = "more per trial: any increase regresses"
	default:
		f.Why = "no increase"
	}
	return f
}
