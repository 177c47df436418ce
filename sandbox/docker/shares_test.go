package docker

import (
	"context"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// TestSetCPUSharesReachesRunningCommands: a command started at a low CPU
// weight gets the new one while it runs (the gate waiting for a warm-up
// that yielded to the agent), and later commands start with it.
func TestSetCPUSharesReachesRunningCommands(t *testing.T) {
	r := newTestRunner(t, t.TempDir(), func(c *Config) { c.CPUShares = 64 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, sandbox.Command{Args: []string{"sleep", "30"}})
		done <- err
	}()
	id := waitLive(t, r)
	if got := shares(t, r, id); got != 64 {
		t.Fatalf("the command started with CPU weight %d, want 64", got)
	}
	if err := r.SetCPUShares(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := shares(t, r, id); got != 1024 {
		t.Errorf("after SetCPUShares(0) the running command's weight is %d, want the default 1024", got)
	}
	cancel()
	<-done
	r.sharesMu.Lock()
	next := r.cfg.CPUShares
	r.sharesMu.Unlock()
	if next != 0 {
		t.Errorf("later commands would start with weight %d, want the default (0)", next)
	}
}

// waitLive returns the ID of the runner's one running command.
func waitLive(t *testing.T, r *Runner) string {
	t.Helper()
	for range 600 {
		r.sharesMu.Lock()
		for id := range r.live {
			r.sharesMu.Unlock()
			return id
		}
		r.sharesMu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the command never started")
	return ""
}

func shares(t *testing.T, r *Runner, id string) int64 {
	t.Helper()
	info, err := r.e.cli.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return info.HostConfig.CPUShares
}
