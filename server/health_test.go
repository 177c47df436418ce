package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/server"
)

// TestHealth: bcode/health names the server, its process and workspace,
// and answers for Docker and the model server either way, with a detail
// a user can act on.
func TestHealth(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	var h server.HealthResult
	if err := e.Conn.Call(ctx, server.MethodHealth, nil, &h); err != nil {
		t.Fatalf("%s: %v", server.MethodHealth, err)
	}
	root, err := filepath.EvalSymlinks(e.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "bcode-ls" || h.Version != server.Version || h.PID != os.Getpid() || h.Root != root {
		t.Errorf("health = %+v, want bcode-ls %s, pid %d, root %s", h, server.Version, os.Getpid(), root)
	}
	t.Logf("bcode/health: %+v", h)
	if h.Docker.Detail == "" {
		t.Errorf("docker: no detail: %+v", h.Docker)
	}
	if h.Docker.OK && !strings.HasPrefix(h.Docker.Detail, "Docker ") {
		t.Errorf("docker answered, but the detail does not say which: %q", h.Docker.Detail)
	}
	if h.Model.Endpoint == "" || h.Model.Detail == "" {
		t.Errorf("model: %+v, want the endpoint and a detail", h.Model)
	}
	if !h.Model.OK && !strings.Contains(h.Model.Detail, "bcode model serve") {
		t.Errorf("model: not ready, but the detail does not say how to start one: %q", h.Model.Detail)
	}
}
