package score

import (
	"math"
	"sort"

	"github.com/bcode-dev/bcode/engine/bench"
)

// measures take a figure over some results; false when the results do
// not give it (no success to divide tokens by, no memory measured).
var measures = map[string]func([]bench.Result) (float64, bool){
	FigureTokensPerSuccess: tokensPerSuccess,
	FigureSecondsMedian:    func(rs []bench.Result) (float64, bool) { return quantile(seconds(rs), 0.5) },
	FigureSecondsP90:       func(rs []bench.Result) (float64, bool) { return quantile(seconds(rs), 0.9) },
	FigureModelCalls:       meanModelCalls,
	FigureServerRSS:        peakServerRSS,
}

// figures takes every figure over all trials together and over each
// alone, for its spread.
func figures(trials []trial) map[string]Figure {
	var all []bench.Result
	for _, tr := range trials {
		all = append(all, tr...)
	}
	out := map[string]Figure{}
	for _, name := range FigureNames {
		measure := measures[name]
		v, ok := measure(all)
		if !ok {
			continue
		}
		f := Figure{Value: v, PerTrial: []float64{}}
		for _, tr := range trials {
			if pv, ok := measure(tr); ok {
				f.PerTrial = append(f.PerTrial, pv)
			}
		}
		f.Min, f.Max, f.Stddev = spread(f.PerTrial)
		out[name] = f
	}
	return out
}

func tokensPerSuccess(rs []bench.Result) (float64, bool) {
	tokens, passes := 0, 0
	for _, r := range rs {
		tokens += r.Tokens
		if r.Outcome == bench.Pass {
			passes++
		}
	}
	if passes == 0 {
		return 0, false
	}
	return float64(tokens) / float64(passes), true
}

func meanModelCalls(rs []bench.Result) (float64, bool) {
	if len(rs) == 0 {
		return 0, false
	}
	calls := 0
	for _, r := range rs {
		calls += r.ModelCalls
	}
	return float64(calls) / float64(len(rs)), true
}

func peakServerRSS(rs []bench.Result) (float64, bool) {
	var peak int64
	for _, r := range rs {
		peak = max(peak, r.ServerRSS)
	}
	return float64(peak), peak > 0
}

func seconds(rs []bench.Result) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.Seconds
	}
	return out
}

// quantile is the q-quantile of vs: the median (q = 0.5) is the middle
// value or the mean of the two middle ones; any other q is the nearest
// rank, the ⌈q·n⌉-th smallest value, which is one that occurred.
func quantile(vs []float64, q float64) (float64, bool) {
	n := len(vs)
	if n == 0 {
		return 0, false
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if q == 0.5 && n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	if q == 0.5 {
		return s[n/2], true
	}
	rank := int(math.Ceil(q * float64(n)))
	return s[max(rank, 1)-1], true
}

// spread is the minimum, maximum and population standard deviation of
// vs (zeros for none).
func spread(vs []float64) (lo, hi, stddev float64) {
	if len(vs) == 0 {
		return 0, 0, 0
	}
	lo, hi = vs[0], vs[0]
	sum := 0.0
	for _, v := range vs {
		lo, hi, sum = math.Min(lo, v), math.Max(hi, v), sum+v
	}
	mean := sum / float64(len(vs))
	var sq float64
	for _, v := range vs {
		sq += (v - mean) * (v - mean)
	}
	return lo, hi, math.Sqrt(sq / float64(len(vs)))
}
