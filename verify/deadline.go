package verify

import (
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// Every deadline of a run the gate or its evidence makes comes from
// sandbox.Load: what the same tests took in a run already measured, the
// floor the base's config (or the caller) gives, and the machine's load,
// so that a verdict does not change with how busy the machine is. A run
// that still times out is retried once with Load.RetryDeadline; a second
// timeout is a result, and its detail names the run, both deadlines and
// the load (TimeoutDetail).

// TimeoutDetail is the sentence a run that timed out twice leaves in its
// tests' details: which run, both deadlines, the load.
func TimeoutDetail(run string, first, retry time.Duration, l sandbox.Load) string {
	return fmt.Sprintf("%s timed out twice: after %s, then after %s on retry (%s)", run, first.Round(time.Second), retry.Round(time.Second), l)
}
