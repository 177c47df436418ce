package sandbox

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Every deadline bcode derives (the gate's runs, its evidence, the code
// index's loads) comes from here: what the same work took when it was
// last measured, the floor the configuration (or the caller) gives, and
// the machine's load, so that an answer does not change with how busy
// the machine is.

// Load is the machine's load as the deadlines read it: the one-minute load
// average of /proc/loadavg and the number of CPUs this process may use.
type Load struct {
	Avg1 float64
	CPUs int
}

// maxLoadFactor caps Load.Factor: past it a run is starved rather than
// slow, and a deadline that kept growing would only hide a hang.
const maxLoadFactor = 16

// ReadLoad is the machine's load now. Where /proc/loadavg cannot be read
// (not Linux) the load is taken as one runnable process per CPU: a
// factor of 1, the deadlines as configured.
func ReadLoad() Load {
	l := Load{CPUs: max(runtime.NumCPU(), 1)}
	l.Avg1 = float64(l.CPUs)
	b, err := ReadPath("/proc/loadavg", 4096)
	if err != nil {
		return l
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
			l.Avg1 = v
		}
	}
	return l
}

// Factor is how much longer than at rest a run may take now: the runnable
// processes per CPU, at least 1 and at most maxLoadFactor. With more
// runnable processes than CPUs the scheduler shares each CPU among them,
// so a run's wall time stretches by about load/CPUs (at load 100 on two
// CPUs, ≈50×: the cap makes that 16× and the retry covers the rest).
func (l Load) Factor() float64 {
	if l.CPUs < 1 {
		return 1
	}
	return min(max(l.Avg1/float64(l.CPUs), 1), maxLoadFactor)
}

func (l Load) String() string {
	return fmt.Sprintf("load %.1f on %d CPUs", l.Avg1, l.CPUs)
}

// A measured run's deadline is measuredFactor times its measured duration
// plus measuredSlack (a process start, a build the measurement did not
// include), before the load factor.
const (
	measuredFactor = 5
	measuredSlack  = 10 * time.Second
)

// Deadline is a run's deadline: the larger of floor (the base's configured
// timeout, or a caller's lower bound) times the load factor, and what the
// same tests' measured run allows (measured 0: not measured). A configured
// timeout is so never cut, only stretched on a busy machine; a measurement
// is not stretched again, as it was taken under the load it had.
func (l Load) Deadline(floor, measured time.Duration) time.Duration {
	d := time.Duration(float64(floor) * l.Factor())
	if measured > 0 {
		d = max(d, measuredFactor*measured+measuredSlack)
	}
	return scaleDeadline(d)
}

// RetryDeadline is the deadline of the one retry of a run that timed out
// with first: three times as long, and at least what the load now asks of
// floor and of the other side's measured run of the same tests (a run
// whose other side took two minutes gets at least ten minutes and ten
// seconds).
func (l Load) RetryDeadline(first, floor, measured time.Duration) time.Duration {
	return max(3*first, l.Deadline(floor, measured))
}

// deadlineScale multiplies every deadline Deadline returns (as bits of a
// float64; 0 means 1). Only tests set it (ScaleDeadlines).
var deadlineScale atomic.Uint64

func scaleDeadline(d time.Duration) time.Duration {
	if bits := deadlineScale.Load(); bits != 0 {
		return time.Duration(float64(d) * math.Float64frombits(bits))
	}
	return d
}

// ScaleDeadlines multiplies every deadline the gate and its evidence derive
// by f until the returned function restores the old scale. It is a test
// hook: a test that cuts the deadlines tenfold shows that the verdicts do
// not hang on their margin.
func ScaleDeadlines(f float64) (restore func()) {
	old := deadlineScale.Swap(math.Float64bits(f))
	return func() { deadlineScale.Store(old) }
}
