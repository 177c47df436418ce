package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// TestTimeoutDetail: a run that timed out twice names the run, both
// deadlines and the load.
func TestTimeoutDetail(t *testing.T) {
	busy := sandbox.Load{Avg1: 12, CPUs: 2}
	d := TimeoutDetail("the head's suite run", time.Minute, 3*time.Minute, busy)
	for _, want := range []string{"the head's suite run", "1m0s", "3m0s", "load 12.0 on 2 CPUs"} {
		if !strings.Contains(d, want) {
			t.Errorf("timeout detail %q does not name %q", d, want)
		}
	}
}
