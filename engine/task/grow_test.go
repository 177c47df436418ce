package task

import (
	"math"
	"testing"
	"time"
)

// TestGrowSaturates: raising a budget never wraps it negative (which would
// read as "no limit").
func TestGrowSaturates(t *testing.T) {
	for _, c := range []struct{ budget, more, want int }{
		{3, 2, 5},
		{0, 7, 7},
		{math.MaxInt - 1, 1000, math.MaxInt},
		{math.MaxInt, math.MaxInt, math.MaxInt},
		{5, 0, 5},
	} {
		if got := grow(c.budget, c.more); got != c.want {
			t.Errorf("grow(%d, %d) = %d, want %d", c.budget, c.more, got, c.want)
		}
	}
	if got := growDuration(math.MaxInt64-time.Hour, 2*time.Hour); got != math.MaxInt64 {
		t.Errorf("growDuration wrapped: %v", got)
	}
	if got := growDuration(time.Hour, time.Minute); got != time.Hour+time.Minute {
		t.Errorf("growDuration(1h, 1m) = %v", got)
	}
}
