package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/bcode-dev/bcode/sandbox"
)

// envOrphanChild makes the test binary the process that starts a
// container and is then SIGKILLed (TestContainerEndsWithItsProcess).
const envOrphanChild = "BCODE_DOCKER_ORPHAN_CHILD"

// TestOrphanChild runs only as that child: it starts a command that
// would run for five minutes, with no input (so under the supervisor) or
// with an input stream it never closes, says so, and waits to be killed.
func TestOrphanChild(t *testing.T) {
	mode := os.Getenv(envOrphanChild)
	if mode == "" {
		t.Skip("runs only as TestContainerEndsWithItsProcess's child")
	}
	wt := os.Getenv("BCODE_DOCKER_ORPHAN_DIR")
	r := newTestRunner(t, wt, func(c *Config) { c.Labels = map[string]string{"dev.bcode.test": os.Getenv("BCODE_DOCKER_ORPHAN_TAG")} })
	c := sandbox.Command{Args: []string{"sh", "-c", "echo started; exec sleep 300"}, Timeout: 10 * time.Minute}
	if mode == "stdin" {
		// The agent's case: its input is a pipe bcode holds open.
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		// Held, never closed: only the kill closes it.
		defer inW.Close()
		c.Stdin = inR
		c.Args = []string{"sh", "-c", "echo started; cat >/dev/null"}
	}
	c.Stdout = stdoutLine{}
	_, err := r.Run(context.Background(), c)
	t.Fatalf("the command ended before the kill: %v", err)
}

// stdoutLine passes the container's output to this process's stdout, where
// the parent waits for "started".
type stdoutLine struct{}

func (stdoutLine) Write(p []byte) (int, error) { return os.Stdout.Write(p) }

// TestContainerEndsWithItsProcess: a bcode process is SIGKILLed while its
// container runs a command. The container stops by itself within 10 s —
// under the supervisor for a command without input, by reading end of file
// for one that reads its input — with no sweep; then ReapOrphans removes
// it, since its owner is dead, and leaves a live owner's container alone.
func TestContainerEndsWithItsProcess(t *testing.T) {
	e := requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A live owner's container (this process's), which no sweep may touch.
	live := newTestRunner(t, t.TempDir(), nil)
	liveDone := make(chan struct{})
	liveCtx, stopLive := context.WithCancel(ctx)
	go func() {
		defer close(liveDone)
		live.Run(liveCtx, sandbox.Command{Args: []string{"sleep", "300"}})
	}()
	defer func() { stopLive(); <-liveDone }()

	for _, mode := range []string{"no-input", "stdin"} {
		t.Run(mode, func(t *testing.T) {
			tag := fmt.Sprintf("orphan-%s-%d", mode, time.Now().UnixNano())
			child := exec.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.v")
			child.Env = append(os.Environ(), envOrphanChild+"="+mode, "BCODE_DOCKER_ORPHAN_DIR="+t.TempDir(), "BCODE_DOCKER_ORPHAN_TAG="+tag)
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			child.Stderr = os.Stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer child.Process.Kill()
			started := make(chan bool, 2)
			var lines []string
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines = append(lines, sc.Text())
					if strings.Contains(sc.Text(), "started") {
						started <- true
					}
				}
				started <- false
			}()
			select {
			case ok := <-started:
				if !ok {
					t.Fatal("the child ended before its command started")
				}
			case <-ctx.Done():
				t.Fatal("the child's command never started")
			}
			containers := func(status string) []container.Summary {
				f := filters.NewArgs(filters.Arg("label", "dev.bcode.test="+tag))
				if status != "" {
					f.Add("status", status)
				}
				list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
				if err != nil {
					t.Fatal(err)
				}
				return list
			}
			// The engine's status filter can lag its own "Up" a moment.
			for i := 0; i < 50 && len(containers("running")) == 0; i++ {
				time.Sleep(100 * time.Millisecond)
			}
			if n := len(containers("running")); n != 1 {
				all := containers("")
				var st []string
				for _, c := range all {
					st = append(st, c.Status)
				}
				t.Fatalf("%d containers running before the kill, want 1 (all: %v; child said %q)", n, st, lines)
			}
			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			child.Wait()
			killed := time.Now()
			for len(containers("running")) > 0 {
				if time.Since(killed) > 10*time.Second {
					t.Fatalf("the container still runs %s after its process was SIGKILLed", time.Since(killed).Round(time.Millisecond))
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, c := range containers("") {
				if in, err := e.cli.ContainerInspect(ctx, c.ID); err == nil && in.State != nil && in.State.Running {
					t.Fatalf("the container still runs after the kill (inspect)")
				}
			}
			t.Logf("%s: the container stopped %s after the SIGKILL", mode, time.Since(killed).Round(10*time.Millisecond))
			if got := containers(""); len(got) != 1 || got[0].Labels[LabelOwner] == "" || got[0].Labels[LabelHost] == "" {
				t.Fatalf("after the kill: %d containers, want 1 carrying its owner (labels %v)", len(got), got)
			}
			n, err := e.ReapOrphans(ctx, "")
			if err != nil || n < 1 {
				t.Fatalf("ReapOrphans = %d, %v; want the dead child's container removed", n, err)
			}
			if got := containers(""); len(got) != 0 {
				t.Errorf("the dead owner's container is still there after ReapOrphans")
			}
			// Run as root, the dead runner also left its worktree's disk
			// mounted; with its containers gone, that goes too.
			if _, err := ReleaseStaleDisks(ctx); err != nil {
				t.Errorf("ReleaseStaleDisks: %v", err)
			}
		})
	}
	f := filters.NewArgs(filters.Arg("label", LabelOwner), filters.Arg("status", "running"), filters.Arg("label", "dev.bcode.test="+t.Name()))
	list, err := e.cli.ContainerList(ctx, container.ListOptions{Filters: f})
	if err != nil || len(list) != 1 {
		t.Errorf("the live owner's container: %d running (%v), want 1: ReapOrphans must leave it", len(list), err)
	}
}
