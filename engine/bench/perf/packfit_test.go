package perf

import "testing"

// TestFitWeightsLearnsWhatPredicts: on changes where the changed function
// is always the one with feature 0 and never the one with only feature 1,
// the fit weighs feature 0 above feature 1, and the fitted weights order
// the changed function first in every case.
func TestFitWeightsLearnsWhatPredicts(t *testing.T) {
	var cases []fitCase
	for i := range 10 {
		c := fitCase{x: [][]float64{{0, 1}, {1, 0}, {0, 1}, {0, 0}}, pos: []int{1}}
		if i%2 == 0 {
			c.x = append(c.x, []float64{1, 1}) // a second changed one with both
			c.pos = append(c.pos, 4)
		}
		cases = append(cases, c)
	}
	w, _ := fitWeights(cases, []float64{0, 0}, 0.01, 500, false)
	if !(w[0] > 0 && w[0] > w[1]) {
		t.Fatalf("fitted %v: want feature 0 weighed above feature 1", w)
	}
	for _, c := range cases {
		score := func(x []float64) float64 { return w[0]*x[0] + w[1]*x[1] }
		for i, x := range c.x {
			if i != c.pos[0] && score(x) >= score(c.x[c.pos[0]]) && x[0] == 0 {
				t.Fatalf("row %v scores %.2f, the changed function %.2f", x, score(x), score(c.x[c.pos[0]]))
			}
		}
	}
}

// TestCodeBodyRecallCountsOnlyChangedCode: tests are left out of the
// column, and a change that edits no other code has none (-1).
func TestCodeBodyRecallCountsOnlyChangedCode(t *testing.T) {
	ts := []target{
		{changedFunc: changedFunc{file: "a.go", name: "A"}},
		{changedFunc: changedFunc{file: "b.go", name: "B"}},
		{changedFunc: changedFunc{file: "a_test.go", name: "TestA", isTest: true}},
	}
	got := codeBodyRecall(ts, func(t target) bool { return t.name == "A" || t.name == "TestA" })
	if got != 0.5 {
		t.Fatalf("got %.2f, want 0.50 (A of A and B; TestA does not count)", got)
	}
	if got := codeBodyRecall(ts[2:], func(target) bool { return true }); got != -1 {
		t.Fatalf("tests only: got %.2f, want -1", got)
	}
}

// TestTopHitsCountsOnlyTheTop: a changed function ranked below bodyTop
// rows is not counted.
func TestTopHitsCountsOnlyTheTop(t *testing.T) {
	c := fitCase{pos: []int{0, bodyTop + 1}}
	for i := range bodyTop + 2 {
		c.x = append(c.x, []float64{float64(bodyTop + 2 - i)}) // row 0 best, the last worst
	}
	if got := topHits(c, []float64{1}); got != 1 {
		t.Fatalf("topHits = %d, want 1 (row 0 in the top %d, row %d not)", got, bodyTop, bodyTop+1)
	}
	if got := topHits(c, []float64{-1}); got != 1 {
		t.Fatalf("reversed: topHits = %d, want 1 (row %d now in the top)", got, bodyTop+1)
	}
}
