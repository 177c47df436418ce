package score

import (
	"encoding/json"
	"fmt"
	"math"
)

// Z90 is the standard normal quantile of a two-sided 90% interval:
// Φ⁻¹(0.95).
const Z90 = 1.6448536269514722

// Rate is a count of successes out of trials with its 90% Wilson score
// interval. With no trials there is no rate: Rate and Wilson90 are then
// zero in Go and null in JSON, never NaN, and String says "no trials".
//
// Its JSON is {successes, trials, rate, wilson90: [lo, hi]}, a format
// other tools read (docs/evaluation.md).
type Rate struct {
	Successes int
	Trials    int
	Rate      float64
	Wilson90  [2]float64
}

// NewRate is successes out of trials with its interval; it refuses
// counts no run can produce.
func NewRate(successes, trials int) (Rate, error) {
	if trials < 0 || successes < 0 || successes > trials {
		return Rate{}, fmt.Errorf("%w: %d successes out of %d trials", ErrScorecard, successes, trials)
	}
	r := Rate{Successes: successes, Trials: trials}
	if trials > 0 {
		r.Rate = float64(successes) / float64(trials)
		r.Wilson90 = wilson(successes, trials, Z90)
	}
	return r, nil
}

// wilson is the Wilson score interval of s successes in n > 0 trials:
// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n). Unlike the normal
// approximation it stays inside [0, 1] and is not empty at 0/n or n/n,
// the rates a small suite often has. The ends at 0 and n are exact.
func wilson(s, n int, z float64) [2]float64 {
	p, nf, z2 := float64(s)/float64(n), float64(n), z*z
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi := math.Max(0, center-half), math.Min(1, center+half)
	if s == 0 {
		lo = 0
	}
	if s == n {
		hi = 1
	}
	return [2]float64{lo, hi}
}

// Measured reports whether the rate has trials at all.
func (r Rate) Measured() bool { return r.Trials > 0 }

// Overlaps reports whether the two intervals share a point.
func (r Rate) Overlaps(o Rate) bool {
	return r.Wilson90[0] <= o.Wilson90[1] && o.Wilson90[0] <= r.Wilson90[1]
}

// String is "83.3% (10/12) [60.2%, 94.5%]", or "no trials".
func (r Rate) String() string {
	if !r.Measured() {
		return "no trials"
	}
	return fmt.Sprintf("%s (%d/%d) [%s, %s]", percent(r.Rate), r.Successes, r.Trials, percent(r.Wilson90[0]), percent(r.Wilson90[1]))
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// rateJSON is Rate's JSON: rate and wilson90 are null with no trials.
type rateJSON struct {
	Successes int         `json:"successes"`
	Trials    int         `json:"trials"`
	Rate      *float64    `json:"rate"`
	Wilson90  *[2]float64 `json:"wilson90"`
}

func (r Rate) MarshalJSON() ([]byte, error) {
	j := rateJSON{Successes: r.Successes, Trials: r.Trials}
	if r.Measured() {
		j.Rate, j.Wilson90 = &r.Rate, &r.Wilson90
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a rate and recomputes its interval from the
// counts, so a scorecard edited by hand cannot carry a rate or an
// interval its counts do not give.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var j rateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	nr, err := NewRate(j.Successes, j.Trials)
	if err != nil {
		return err
	}
	if j.Rate != nil && math.Abs(*j.Rate-nr.Rate) > 1e-9 {
		return fmt.Errorf("%w: rate %v is not %d/%d", ErrScorecard, *j.Rate, j.Successes, j.Trials)
	}
	*r = nr
	return nil
}
