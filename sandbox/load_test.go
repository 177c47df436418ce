package sandbox

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadLoad: the load is /proc/loadavg's first field and the CPUs this
// process may use.
func TestReadLoad(t *testing.T) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Skipf("no /proc/loadavg here: %v", err)
	}
	before, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	l := ReadLoad()
	b, _ = os.ReadFile("/proc/loadavg")
	after, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if l.CPUs != runtime.NumCPU() {
		t.Errorf("CPUs %d, want %d", l.CPUs, runtime.NumCPU())
	}
	if l.Avg1 < min(before, after) || l.Avg1 > max(before, after) {
		t.Errorf("load %.2f; /proc/loadavg said %.2f, then %.2f", l.Avg1, before, after)
	}
}

func TestDeadlines(t *testing.T) {
	idle := Load{Avg1: 0.5, CPUs: 2}
	busy := Load{Avg1: 12, CPUs: 2}
	starved := Load{Avg1: 100, CPUs: 2}
	for _, tc := range []struct {
		l    Load
		want float64
	}{{idle, 1}, {busy, 6}, {starved, maxLoadFactor}, {Load{Avg1: 3}, 1}} {
		if got := tc.l.Factor(); got != tc.want {
			t.Errorf("%v: factor %v, want %v", tc.l, got, tc.want)
		}
	}
	// The configured timeout is the floor: a short measurement never cuts it.
	if got := idle.Deadline(5*time.Minute, time.Second); got != 5*time.Minute {
		t.Errorf("idle, floor 5m, measured 1s: %s", got)
	}
	// A long measurement raises it, and the load stretches it.
	if got := idle.Deadline(time.Minute, 2*time.Minute); got != 10*time.Minute+measuredSlack {
		t.Errorf("idle, floor 1m, measured 2m: %s", got)
	}
	if got := busy.Deadline(5*time.Minute, 0); got != 30*time.Minute {
		t.Errorf("load 12 on 2 CPUs, floor 5m: %s, want 30m", got)
	}
	// No configured limit stays none.
	if got := busy.Deadline(0, 0); got != 0 {
		t.Errorf("no floor, nothing measured: %s, want 0 (no limit)", got)
	}
	if got := idle.RetryDeadline(time.Minute, time.Minute, 0); got != 3*time.Minute {
		t.Errorf("retry of 1m at rest: %s, want 3m", got)
	}
	if got := idle.RetryDeadline(time.Minute, time.Minute, 4*time.Minute); got != 20*time.Minute+measuredSlack {
		t.Errorf("retry of 1m, other side measured 4m: %s", got)
	}
	restore := ScaleDeadlines(0.1)
	if got := idle.Deadline(5*time.Minute, 0); got != 30*time.Second {
		t.Errorf("cut tenfold: %s, want 30s", got)
	}
	restore()
	if got := idle.Deadline(5*time.Minute, 0); got != 5*time.Minute {
		t.Errorf("restored: %s, want 5m", got)
	}
}
