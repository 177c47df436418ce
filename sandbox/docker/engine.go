// Package docker is the sandbox backend that runs commands in locked-down
// Docker containers: no network, no capabilities, no new privileges, a
// non-root user, a read-only root, sized tmpfs scratch space, pids, memory
// and CPU limits, Docker's default seccomp profile and an init process.
// Only the attempt's worktree is writable; toolchains are mounted read-only;
// the git directory and secret-looking files in the worktree are masked.
//
// It is the only package of bcode that talks to Docker (an architecture test
// enforces that), so everything a command needs — reachability, the engine's
// API version, building the image, running commands — is exposed here
// without Docker's own types.
//
// The client negotiates the API version with the engine, so the same binary
// works against Debian's docker.io 20.10 (API 1.41) and current engines.
package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// DefaultImage is the image `bcode sandbox build` makes and runners use
// unless told otherwise (config.DefaultSandboxImage; TestDefaultsAgreeWithConfig
// holds them equal, since neither package may import the other).
const DefaultImage = "bcode-sandbox:latest"

// labelSandbox marks every container this package creates, so leftovers of
// a killed process can be found and removed (Engine.Reap).
const labelSandbox = "dev.bcode.sandbox"

// ErrUnavailable reports that the Docker engine cannot be reached. Its
// message says how to start one.
var ErrUnavailable = errors.New("docker not running: start it with 'sudo systemctl start docker' or 'dockerd &'")

// ErrNoImage reports that the sandbox image has not been built.
var ErrNoImage = errors.New("sandbox image not found: build it with 'bcode sandbox build'")

// Engine is a connection to a Docker engine.
type Engine struct {
	cli *client.Client
}

// Connect reaches the engine named by the usual DOCKER_HOST environment (or
// the default socket), negotiates the API version and pings it. An engine
// that does not answer is ErrUnavailable with the underlying reason.
func Connect(ctx context.Context) (*Engine, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrUnavailable, err)
	}
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w (%v)", ErrUnavailable, err)
	}
	return &Engine{cli: cli}, nil
}

// Close releases the connection.
func (e *Engine) Close() error { return e.cli.Close() }

// Version describes the engine and the API version both sides agreed on.
type Version struct {
	Engine        string // "20.10.24+dfsg1"
	APIVersion    string // the engine's newest API ("1.41")
	MinAPIVersion string // the engine's oldest API
	Negotiated    string // what this client speaks to it
	OS, Arch      string
	Seccomp       bool // the engine applies a seccomp profile by default
}

// Version asks the engine who it is.
func (e *Engine) Version(ctx context.Context) (Version, error) {
	v, err := e.cli.ServerVersion(ctx)
	if err != nil {
		return Version{}, e.wrap(ctx, err)
	}
	out := Version{
		Engine: v.Version, APIVersion: v.APIVersion, MinAPIVersion: v.MinAPIVersion,
		Negotiated: e.cli.ClientVersion(), OS: v.Os, Arch: v.Arch,
	}
	info, err := e.cli.Info(ctx)
	if err != nil {
		return Version{}, e.wrap(ctx, err)
	}
	for _, opt := range info.SecurityOptions {
		if len(opt) >= len("name=seccomp") && opt[:len("name=seccomp")] == "name=seccomp" {
			out.Seccomp = true
		}
	}
	return out, nil
}

// Reap force-removes every container this package created that carries all
// of the given labels (nil: every sandbox container), for instance those of
// an attempt whose runner was killed. It returns how many it removed.
func (e *Engine) Reap(ctx context.Context, labels map[string]string) (int, error) {
	f := filters.NewArgs(filters.Arg("label", labelSandbox))
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return 0, e.wrap(ctx, err)
	}
	n := 0
	for _, c := range list {
		err := e.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return n, e.wrap(ctx, err)
		}
		n++
	}
	return n, nil
}

// wrap turns a lost connection into ErrUnavailable and leaves the rest.
func (e *Engine) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%w (%v)", ErrUnavailable, err)
	}
	return err
}
