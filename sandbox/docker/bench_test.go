package docker

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
)

// The three benchmarks measure what one short command (`true`) costs on
// each path; docs/sandbox.md records the numbers and why Run uses one
// container per command. Run them with:
//
//	go test -run '^$' -bench . -benchtime 20x ./sandbox/docker/

// BenchmarkRunPerCommand is Runner.Run: create, attach, start, wait, remove.
func BenchmarkRunPerCommand(b *testing.B) {
	r := benchRunner(b)
	ctx := context.Background()
	for b.Loop() {
		res, err := r.Run(ctx, sandbox.Command{Args: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

// BenchmarkExecLongLived is the alternative: one container per attempt kept
// alive, each command a `docker exec` in it.
func BenchmarkExecLongLived(b *testing.B) {
	r := benchRunner(b)
	ctx := context.Background()
	cc, hc, err := r.spec([]string{"sleep", "infinity"}, nil, r.cfg.Worktree, false, false)
	if err != nil {
		b.Fatal(err)
	}
	created, err := r.e.cli.ContainerCreate(ctx, cc, hc, nil, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	defer r.e.cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	if err := r.e.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ex, err := r.e.cli.ContainerExecCreate(ctx, created.ID, container.ExecOptions{
			Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true, User: r.user, Env: r.env, WorkingDir: r.cfg.Worktree})
		if err != nil {
			b.Fatal(err)
		}
		hij, err := r.e.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		_, _ = stdcopy.StdCopy(&out, io.Discard, hij.Reader)
		hij.Close()
		in, err := r.e.cli.ContainerExecInspect(ctx, ex.ID)
		if err != nil || in.ExitCode != 0 {
			b.Fatalf("%v %+v", err, in)
		}
	}
}

// BenchmarkHost is the host runner, for the per-command overhead baseline.
func BenchmarkHost(b *testing.B) {
	r := host.New()
	ctx := context.Background()
	for b.Loop() {
		res, err := r.Run(ctx, sandbox.Command{Args: []string{"true"}, Dir: b.TempDir()})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

func benchRunner(b *testing.B) *Runner {
	e, err := Connect(context.Background())
	if err != nil {
		b.Skip("needs a Docker engine: start dockerd (apt-get install docker.io; dockerd &)")
	}
	if _, err := e.BuildImage(context.Background(), testImage); err != nil {
		b.Fatal(err)
	}
	r, err := e.NewRunner(context.Background(), Config{Image: testImage, Worktree: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(); e.Close() })
	return r
}
