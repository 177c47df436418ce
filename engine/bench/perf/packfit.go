package perf

// --fit: the ranking's weights refitted on the tuning projects. The pack's
// score is linear in its features (pack.FeatureNames), so a conditional
// logit — per change, a softmax over every function the ranker scored,
// maximising the probability of each function the commit changed — gives
// weights that order the ranking by how likely each function is to be
// changed, learned from real commits. Only tuning projects' changes are
// fitted on; the held-out ones are never read here.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/bcode-dev/bcode/engine/pack"
)

// fitCase is one change's ranking as feature rows, and which rows the
// commit changed.
type fitCase struct {
	project string
	x       [][]float64
	pos     []int
}

// fitCases are the tuning changes' rankings; a target the ranker never
// scored cannot move the fit and is left out. With code, only non-test
// functions and targets: the order the function bodies are chosen in.
func fitCases(results []changeResult, code bool) []fitCase {
	var out []fitCase
	for _, r := range results {
		if !isTuning(r.name) || len(r.ranking) == 0 {
			continue
		}
		fc := fitCase{project: strings.Fields(r.name)[0]}
		for _, rk := range r.ranking {
			if code && rk.Test {
				continue
			}
			fc.x = append(fc.x, rk.Features)
			if slices.ContainsFunc(r.targetList, func(t target) bool {
				return rk.File == t.file && rk.Name == t.name && rk.Line >= t.start && rk.Line <= t.end
			}) {
				fc.pos = append(fc.pos, len(fc.x)-1)
			}
		}
		if len(fc.pos) > 0 {
			out = append(out, fc)
		}
	}
	return out
}

// fitWeights maximises the conditional logit's log-likelihood, less an
// L2 penalty l2·|w|², by gradient ascent from w0 (Adam steps).
//
// Every weight but the last is kept ≥ 0 (a signal is evidence that a
// function changes, or none); the last, when lastFree, is an offset (the
// pack's: for being a test) and may be negative.
func fitWeights(cases []fitCase, w0 []float64, l2 float64, steps int, lastFree bool) ([]float64, float64) {
	k := len(w0)
	w := slices.Clone(w0)
	m, v := make([]float64, k), make([]float64, k)
	const lr, b1, b2 = 0.05, 0.9, 0.999
	var ll float64
	for step := 1; step <= steps+1; step++ {
		grad := make([]float64, k)
		ll = 0
		for _, c := range cases {
			s := make([]float64, len(c.x))
			hi := math.Inf(-1)
			for i, x := range c.x {
				for j := range k {
					s[i] += w[j] * x[j]
				}
				hi = max(hi, s[i])
			}
			z := 0.0
			for i := range s {
				s[i] = math.Exp(s[i] - hi)
				z += s[i]
			}
			mean := make([]float64, k)
			for i, x := range c.x {
				for j := range k {
					mean[j] += s[i] / z * x[j]
				}
			}
			for _, p := range c.pos {
				ll += math.Log(s[p] / z)
				for j := range k {
					grad[j] += c.x[p][j] - mean[j]
				}
			}
		}
		if step > steps {
			break // the last pass only measured ll at the final w
		}
		for j := range k {
			ll -= l2 * w[j] * w[j]
			g := grad[j] - 2*l2*w[j]
			m[j] = b1*m[j] + (1-b1)*g
			v[j] = b2*v[j] + (1-b2)*g*g
			w[j] += lr * (m[j] / (1 - math.Pow(b1, float64(step)))) / (math.Sqrt(v[j]/(1-math.Pow(b2, float64(step)))) + 1e-8)
			if j != len(w)-1 || !lastFree {
				w[j] = max(w[j], 0) // evidence for, never against
			}
		}
	}
	return w, ll
}

// printFit fits the weights on the tuning changes and prints them beside
// the pack's, both scaled so a call edge weighs 1.
func printFit(w io.Writer, results []changeResult) {
	cases := fitCases(results, false)
	if len(cases) == 0 {
		fmt.Fprintln(w, "\n--fit: no tuning change with a ranked target")
		return
	}
	cur := pack.Weights()
	fitted, ll := fitWeights(cases, make([]float64, len(cur)), 0.01, 3000, true)
	_, llCur := fitWeights(cases, cur, 0, 0, true)
	code, llCode := fitWeights(fitCases(results, true), make([]float64, len(cur)), 0.01, 3000, false)
	rows := 0
	for _, c := range cases {
		rows += len(c.x)
	}
	fmt.Fprintf(w, "\nRanking weights refitted on %d tuning changes (%d scored functions; conditional logit, L2 0.01, weights ≥ 0 but the test offset): log-likelihood %.1f fitted, %.1f with the pack's weights\n\n", len(cases), rows, ll, llCur)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| feature\t| pack weight\t| fitted\t| fitted ÷ fitted call\t| fitted on code only ÷ its call\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|")
	for j, name := range pack.FeatureNames {
		fmt.Fprintf(tw, "| %s\t| %.2f\t| %.3f\t| %.2f\t| %.2f\t|\n", name, cur[j], fitted[j], fitted[j]/fitted[0], code[j]/code[0])
	}
	fmt.Fprintf(tw, "\nfitted on code only (non-test functions and targets): log-likelihood %.1f\n", llCode)
	tw.Flush()
	printLeaveOneOut(w, cases, fitCases(results, true))
}

// handSetWeights are the weights before they were fitted (December 2026),
// in pack.FeatureNames' order: the baseline the leave-one-project-out
// check compares a fit on the other projects with.
var handSetWeights = []float64{1.0, 0.25, 0.6, 0.35, 2.0, 1.0, 0.8, 0.3, 0.3, 0.15, 0.5, 0.3, 0.5, 0}

// bodyTop is about how many bodies an 8k pack holds.
const bodyTop = 20

// printLeaveOneOut fits on every tuning project but one and counts, on
// the one left out, how many of its changed non-test functions rank among
// its top bodyTop non-test functions, against the hand-set weights: how
// well a fit carries to a project it did not see, without touching the
// held-out set.
func printLeaveOneOut(w io.Writer, all, code []fitCase) {
	var projects []string
	for _, c := range all {
		if !slices.Contains(projects, c.project) {
			projects = append(projects, c.project)
		}
	}
	fmt.Fprintf(w, "\nLeave one tuning project out: changed non-test functions among the top %d non-test functions of the left-out project's changes\n\n", bodyTop)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| left out\t| targets\t| fitted on the others\t| hand-set weights\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|")
	var sumFit, sumHand, sumN int
	for _, p := range projects {
		var train []fitCase
		for _, c := range all {
			if c.project != p {
				train = append(train, c)
			}
		}
		fitted, _ := fitWeights(train, make([]float64, len(handSetWeights)), 0.01, 1500, true)
		var nFit, nHand, n int
		for _, c := range code {
			if c.project != p {
				continue
			}
			nFit += topHits(c, fitted)
			nHand += topHits(c, handSetWeights)
			n += len(c.pos)
		}
		sumFit, sumHand, sumN = sumFit+nFit, sumHand+nHand, sumN+n
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %d\t|\n", p, n, nFit, nHand)
	}
	fmt.Fprintf(tw, "| all\t| %d\t| %d\t| %d\t|\n", sumN, sumFit, sumHand)
	tw.Flush()
}

// topHits counts c's positives among its bodyTop best rows under w.
func topHits(c fitCase, w []float64) int {
	idx := make([]int, len(c.x))
	score := make([]float64, len(c.x))
	for i, x := range c.x {
		idx[i] = i
		for j := range w {
			score[i] += w[j] * x[j]
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(score[b], score[a]) })
	hits := 0
	for _, i := range idx[:min(len(idx), bodyTop)] {
		if slices.Contains(c.pos, i) {
			hits++
		}
	}
	return hits
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
