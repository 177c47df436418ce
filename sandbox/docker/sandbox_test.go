package docker

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/bcode-dev/bcode/sandbox"
)

// TestReapStaleRemovesOnlyOlderFences: containers a Sandbox opens carry
// their owner's labels; ReapStale removes a dead holder's (older fence)
// running command and leaves the current holder's alone.
func TestReapStaleRemovesOnlyOlderFences(t *testing.T) {
	e := requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	task := "t-reap-" + time.Now().Format("150405.000000000")
	sb := Sandbox{Template: Config{Image: testImage}}
	start := func(fence int64) (sandbox.ScopedRunner, chan error) {
		r, err := sb.Open(ctx, t.TempDir(), sandbox.Owner{Task: task, Fence: fence, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx, sandbox.Command{Args: []string{"sleep", "300"}})
			done <- err
		}()
		return r, done
	}
	running := func(fence string) int {
		f := filters.NewArgs(filters.Arg("label", LabelTask+"="+task), filters.Arg("status", "running"))
		if fence != "" {
			f.Add("label", LabelFence+"="+fence)
		}
		list, err := e.cli.ContainerList(ctx, container.ListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	old, oldDone := start(1)
	cur, curDone := start(2)
	for running("") < 2 {
		if ctx.Err() != nil {
			t.Fatal("the two commands never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	n, err := e.ReapStale(ctx, task, 2)
	if err != nil || n != 1 {
		t.Fatalf("ReapStale = %d, %v; want 1 container removed", n, err)
	}
	select {
	case <-oldDone: // the dead holder's command ended with its container
	case <-time.After(30 * time.Second):
		t.Fatal("the fence-1 command still runs after its container was reaped")
	}
	if got := running("2"); got != 1 {
		t.Errorf("the current holder's container: %d running, want 1", got)
	}
	if n, err := e.ReapStale(ctx, task, 3); err != nil || n != 1 {
		t.Errorf("ReapStale(fence 3) = %d, %v; want the fence-2 container", n, err)
	}
	<-curDone
	old.Close()
	cur.Close()
	if _, err := e.ReapStale(ctx, "", 1); err == nil {
		t.Error("ReapStale without a task id succeeded")
	}
}
