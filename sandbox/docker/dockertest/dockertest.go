// Package dockertest is what tests outside sandbox/docker need to use a
// real Docker engine: a connection, or a skip that says how to get one (a
// failure instead under BCODE_REQUIRE_ALL=1, as CI sets it, so a green CI
// means the Docker tests ran).
package dockertest

import (
	"context"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// Connect returns an engine connection closed when t ends, or skips t.
func Connect(t testing.TB) *docker.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := docker.Connect(ctx)
	if err != nil {
		testenv.Missing(t, "needs a Docker engine: start dockerd (apt-get install docker.io; dockerd &): "+err.Error())
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Image builds the sandbox image under ref (offline, as `bcode sandbox
// build` does) and removes it when t ends.
func Image(t testing.TB, e *docker.Engine, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := e.BuildImage(ctx, ref); err != nil {
		t.Fatalf("building the sandbox image %s: %v", ref, err)
	}
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
}
