package score

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestWilson90 holds the interval to values computed independently of
// the closed formula rate.go uses: each end is the root, found by
// bisection, of (p̂ − p)² = z²·p(1 − p)/n, the equation whose solutions
// the Wilson interval is, with z = NormalDist().inv_cdf(0.95) from
// Python's statistics module:
//
//	python3 -c 'from statistics import NormalDist; z = NormalDist().inv_cdf(0.95); ...
//	  f = lambda p: (s/n - p)**2 - z*z*p*(1-p)/n  # bisect on [0, s/n] and [s/n, 1], 200 steps'
func TestWilson90(t *testing.T) {
	cases := []struct {
		s, n   int
		lo, hi float64
	}{
		{0, 1, 0, 0.730134051215946},
		{1, 1, 0.269865948784054, 1},
		{0, 3, 0, 0.474195574157513},
		{0, 10, 0, 0.212941970083407},
		{10, 10, 0.787058029916593, 1},
		{1, 2, 0.120866319422274, 0.879133680577726},
		{3, 10, 0.126876583903198, 0.558300204130165},
		{7, 10, 0.441699795869835, 0.873123416096802},
		{45, 50, 0.808462485848429, 0.950470965522555},
		{1, 100, 0.002234092833455, 0.043581773534056},
		{50, 100, 0.418847796112530, 0.581152203887470},
	}
	for _, c := range cases {
		r, err := NewRate(c.s, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Wilson90[0]-c.lo) > 1e-12 || math.Abs(r.Wilson90[1]-c.hi) > 1e-12 {
			t.Errorf("%d/%d: interval %v, want [%.15f %.15f]", c.s, c.n, r.Wilson90, c.lo, c.hi)
		}
		if r.Rate != float64(c.s)/float64(c.n) {
			t.Errorf("%d/%d: rate %v", c.s, c.n, r.Rate)
		}
	}
}

func TestNoTrialsIsNoRate(t *testing.T) {
	r, err := NewRate(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Measured() || math.IsNaN(r.Rate) || r.String() != "no trials" {
		t.Errorf("0/0: measured %v, rate %v, %q", r.Measured(), r.Rate, r.String())
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"successes":0,"trials":0,"rate":null,"wilson90":null}` {
		t.Errorf("0/0 as JSON: %s", got)
	}
	var back Rate
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("0/0 read back: %+v, %v", back, err)
	}
}

func TestRateJSON(t *testing.T) {
	r, _ := NewRate(3, 4)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 || keys["successes"] != 3.0 || keys["trials"] != 4.0 || keys["rate"] != 0.75 || len(keys["wilson90"].([]any)) != 2 {
		t.Errorf("3/4 as JSON: %s", b)
	}
	var back Rate
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("3/4 read back: %+v, %v", back, err)
	}
	for _, bad := range []string{
		`{"successes":3,"trials":4,"rate":0.5,"wilson90":[0,1]}`,
		`{"successes":5,"trials":4,"rate":1.25,"wilson90":[0,1]}`,
		`{"successes":-1,"trials":4}`,
	} {
		if err := json.Unmarshal([]byte(bad), &back); !errors.Is(err, ErrScorecard) {
			t.Errorf("%s: err %v, want ErrScorecard", bad, err)
		}
	}
}

func TestRateString(t *testing.T) {
	r, _ := NewRate(10, 10)
	if got := r.String(); !strings.HasPrefix(got, "100.0% (10/10) [78.7%, 100.0%]") {
		t.Errorf("10/10: %q", got)
	}
}
