package mutate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestRunBaselineRetriesOnce: a baseline run that stalls past its deadline
// once is run again with a longer one and its result kept; one that stalls
// every time is a TimeoutError naming the run, both deadlines and the
// load, never a red baseline. Real processes on the host runner; the
// deadlines are cut (sandbox.ScaleDeadlines) to make the first about two
// seconds, whatever the load.
func TestRunBaselineRetriesOnce(t *testing.T) {
	defer sandbox.ScaleDeadlines(float64(2*time.Second) / float64(mutate.BaselineFloor) / sandbox.ReadLoad().Factor())()
	r := host.New()
	dir := t.TempDir()
	// Stalls the first time only: the marker it leaves lets the retry end at once.
	once := sandbox.Command{Dir: dir, Args: []string{"sh", "-c", "if [ -e marker ]; then echo done; exit 0; fi; touch marker; sleep 30"}}
	res, err := mutate.RunBaseline(context.Background(), r, "the stalling-once run", once, 0)
	if err != nil || res.TimedOut || strings.TrimSpace(string(res.Stdout)) != "done" {
		t.Fatalf("retried run: %+v, %v; want the retry's output", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); err != nil {
		t.Fatalf("the first run did not run: %v", err)
	}
	start := time.Now()
	_, err = mutate.RunBaseline(context.Background(), r, "the always-stalling run", sandbox.Command{Dir: dir, Args: []string{"sleep", "30"}}, 0)
	var te *mutate.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, mutate.ErrTimedOut) {
		t.Fatalf("a run that stalls twice: %v, want a TimeoutError", err)
	}
	if te.Retry < 3*te.First || time.Since(start) < te.First+te.Retry {
		t.Errorf("deadlines %s then %s in %s: want the retry at least three times the first, both spent", te.First, te.Retry, time.Since(start))
	}
	msg := err.Error()
	for _, want := range []string{"the always-stalling run", "timed out twice", "CPUs"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "red") {
		t.Errorf("%q calls a timeout a red baseline", msg)
	}
}
