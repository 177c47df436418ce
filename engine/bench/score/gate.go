package score

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/engine/bench"
)

// Verdict is what the gate says of one rule.
type Verdict string

const (
	OK        Verdict = "ok"
	Warn      Verdict = "warn"      // regressed under a warning rule, or could not be compared
	Regressed Verdict = "regressed" // regressed under a blocking rule
)

// Finding is one rule applied to a baseline and a candidate.
type Finding struct {
	Rule      string  `json:"rule"`
	Baseline  string  `json:"baseline"`
	Candidate string  `json:"candidate"`
	Verdict   Verdict `json:"verdict"`
	Why       string  `json:"why"`
}

// Decision is the gate's answer for one suite.
type Decision struct {
	Suite    bench.Suite `json:"suite"`
	Findings []Finding   `json:"findings"`
}

// Regressed reports whether a blocking rule regressed.
func (d Decision) Regressed() bool {
	for _, f := range d.Findings {
		if f.Verdict == Regressed {
			return true
		}
	}
	return false
}

// verdict is a rule's verdict: a regression blocks or warns as the
// policy says.
func verdict(regressed, blocking bool) Verdict {
	switch {
	case !regressed:
		return OK
	case blocking:
		return Regressed
	}
	return Warn
}

// Gate applies the policy to a candidate scorecard against a baseline.
// It refuses scorecards of runs made differently (bench.ErrNotComparable,
// saying how).
func Gate(baseline, candidate Scorecard, p Policy) (Decision, error) {
	if err := Comparable(baseline.Basis, candidate.Basis); err != nil {
		return Decision{}, err
	}
	d := Decision{Suite: baseline.Basis.Suite}
	d.Findings = append(d.Findings, rateFindings("success", p.Rates.Success, &baseline.Success, &candidate.Success, true)...)
	d.Findings = append(d.Findings, flipFinding(p.Flipped, baseline, candidate))
	if baseline.FalseAcceptance != nil && candidate.FalseAcceptance != nil {
		d.Findings = append(d.Findings, rateFindings("false acceptance", p.Rates.FalseAcceptance, baseline.FalseAcceptance, candidate.FalseAcceptance, false)...)
	}
	if baseline.FalseRejection != nil && candidate.FalseRejection != nil {
		d.Findings = append(d.Findings, rateFindings("false rejection", p.Rates.FalseRejection, baseline.FalseRejection, candidate.FalseRejection, false)...)
	}
	rules := p.Figures.byName()
	for _, name := range FigureNames {
		if f, ok := figureFinding(name, rules[name], baseline.Figures, candidate.Figures); ok {
			d.Findings = append(d.Findings, f)
		}
	}
	d.Findings = append(d.Findings, securityFinding(p.Security, baseline, candidate))
	return d, nil
}

// rateFindings gates a rate overall and, when the rule says so, per
// group, language and split.
func rateFindings(name string, r RateRule, base, cand *Breakdown, higherIsBetter bool) []Finding {
	out := []Finding{rateFinding(name, r, base.Overall, cand.Overall, higherIsBetter)}
	if !r.Breakdowns {
		return out
	}
	for _, g := range bench.Groups {
		if b, ok := base.Group[g]; ok {
			out = append(out, rateFinding(name+" group="+string(g), r, b, cand.Group[g], higherIsBetter))
		}
	}
	for _, lang := range sortedNames(base.Language) {
		out = append(out, rateFinding(name+" language="+lang, r, base.Language[lang], cand.Language[lang], higherIsBetter))
	}
	for _, s := range sortedNames(base.Split) {
		out = append(out, rateFinding(name+" split="+s, r, base.Split[bench.Split(s)], cand.Split[bench.Split(s)], higherIsBetter))
	}
	return out
}

func sortedNames[K ~string, V any](m map[K]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// rateFinding: a rate regresses when the intervals do not overlap and it
// moved the wrong way by more than the tolerance.
func rateFinding(name string, r RateRule, b, c Rate, higherIsBetter bool) Finding {
	f := Finding{Rule: name, Baseline: b.String(), Candidate: c.String(), Verdict: OK}
	switch {
	case !b.Measured() && !c.Measured():
		f.Why = "no trials in either"
		return f
	case !b.Measured() || !c.Measured():
		f.Verdict, f.Why = Warn, "no trials on one side: not compared"
		return f
	}
	worse := b.Rate - c.Rate
	if !higherIsBetter {
		worse = -worse
	}
	moved := "no change"
	if c.Rate != b.Rate {
		moved = fmt.Sprintf("%s %.1f points", upDown(c.Rate-b.Rate), 100*math.Abs(c.Rate-b.Rate))
	}
	tol := fmt.Sprintf("%.1f-point tolerance", 100*r.Tolerance)
	regressed := !b.Overlaps(c) && worse > r.Tolerance+1e-12
	f.Verdict = verdict(regressed, r.Blocking)
	switch {
	case b.Overlaps(c):
		f.Why = "intervals overlap (" + moved + ")"
	case worse <= 0:
		f.Why = "improved: " + moved + ", intervals apart"
	case regressed:
		f.Why = moved + ", intervals apart, beyond the " + tol
	default:
		f.Why = moved + ", intervals apart, within the " + tol
	}
	return f
}

func upDown(d float64) string {
	if d < 0 {
		return "down"
	}
	return "up"
}

// flipFinding: task success regresses when enough tasks that passed in
// every baseline trial failed in every candidate trial.
func flipFinding(r FlipRule, base, cand Scorecard) Finding {
	candByID := map[string]TaskScore{}
	for _, t := range cand.Tasks {
		candByID[t.ID] = t
	}
	always := 0
	var flipped []string
	for _, t := range base.Tasks {
		if t.Trials() == 0 || t.Passes != t.Trials() {
			continue
		}
		always++
		if c := candByID[t.ID]; c.Trials() > 0 && c.Passes == 0 {
			flipped = append(flipped, t.ID)
		}
	}
	f := Finding{
		Rule:      "tasks flipped to failing",
		Baseline:  fmt.Sprintf("%d always passed", always),
		Candidate: fmt.Sprintf("%d of them never passed", len(flipped)),
	}
	regressed := len(flipped) >= r.Min
	f.Verdict = verdict(regressed, r.Blocking)
	switch {
	case len(flipped) == 0:
		f.Why = "none flipped"
	case regressed:
		f.Why = fmt.Sprintf("flipped: %s (at least %d regress)", strings.Join(flipped, ", "), r.Min)
	default:
		f.Why = fmt.Sprintf("flipped: %s (fewer than %d)", strings.Join(flipped, ", "), r.Min)
	}
	return f
}
