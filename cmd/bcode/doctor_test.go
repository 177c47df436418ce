package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/sandbox/docker/dockertest"
)

func runDoctor(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := run(append([]string{"doctor", "--repo", t.TempDir(), "--state", t.TempDir()}, args...), &o, &e)
	if e.Len() > 0 {
		t.Logf("stderr: %s", e.String())
	}
	return code, o.String()
}

func TestDoctorModelServer(t *testing.T) {
	// No Docker here: the model and toolchain lines must not depend on it.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer healthy.Close()
	loading := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"message":"Loading model"}}`))
	}))
	defer loading.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	code, out := runDoctor(t, "--model-endpoint", healthy.URL)
	if !strings.Contains(out, "ok   model    "+healthy.URL+" is healthy") {
		t.Errorf("healthy server:\n%s", out)
	}
	if code != 1 || !strings.Contains(out, "FAIL docker") || !strings.Contains(out, "dockerd &") {
		t.Errorf("no Docker: exit %d\n%s", code, out)
	}
	_, out = runDoctor(t, "--model-endpoint", loading.URL)
	if !strings.Contains(out, "FAIL model") || !strings.Contains(out, "not ready") {
		t.Errorf("loading server:\n%s", out)
	}
	_, out = runDoctor(t, "--model-endpoint", closedURL)
	if !strings.Contains(out, "FAIL model    model server not reachable at "+closedURL) || !strings.Contains(out, "bcode model serve --model FILE.gguf") {
		t.Errorf("no server:\n%s", out)
	}
	for _, want := range []string{"ok   go       go version", "ok   git      git version"} {
		if !strings.Contains(out, want) {
			t.Errorf("toolchains: want %q in\n%s", want, out)
		}
	}
}

func TestDoctorBadConfig(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".bcode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".bcode", "config.toml"), []byte("[gate]\nflake_runs = \"many\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	code := run([]string{"doctor", "--repo", repo, "--state", t.TempDir(), "--model-endpoint", "http://127.0.0.1:1"}, &o, &e)
	if code != 1 || !strings.Contains(o.String(), "FAIL config") {
		t.Errorf("exit %d\n%s", code, o.String())
	}
}

// TestSandboxBuildAndDoctor builds the image through the CLI, checks the
// ledger row, and has doctor find it recorded.
func TestSandboxBuildAndDoctor(t *testing.T) {
	e := dockertest.Connect(t)
	const ref = "bcode-sandbox:clitest"
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
	state := t.TempDir()
	var o, eb bytes.Buffer
	if code := run([]string{"sandbox", "build", "--image", ref, "--state", state}, &o, &eb); code != 0 {
		t.Fatalf("exit %d: %s", code, eb.String())
	}
	img, err := e.Image(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o.String(), img.ID) {
		t.Errorf("output lacks the image id %s:\n%s", img.ID, o.String())
	}
	led, err := ledger.Open(context.Background(), filepath.Join(state, "ledger.db"), ledger.WithSandboxImages())
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := led.LastSandboxImage(context.Background(), ref)
	led.Close()
	if err != nil || !ok || rec.ImageID != img.ID || rec.Rootfs == "" || rec.Engine == "" {
		t.Fatalf("ledger row %+v ok=%v err=%v, want image %s", rec, ok, err, img.ID)
	}

	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".bcode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".bcode", "config.toml"), []byte("[sandbox]\nimage = \""+ref+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Reset()
	run([]string{"doctor", "--repo", repo, "--state", state, "--model-endpoint", "http://127.0.0.1:1"}, &o, &eb)
	for _, want := range []string{"ok   docker   Docker ", "ok   image    " + ref + " " + img.ID, "recorded in the ledger", "ok   orphans  removed "} {
		if !strings.Contains(o.String(), want) {
			t.Errorf("doctor lacks %q:\n%s", want, o.String())
		}
	}
}

func TestSandboxUsage(t *testing.T) {
	var o, e bytes.Buffer
	if code := run([]string{"sandbox"}, &o, &e); code != 2 || !strings.Contains(e.String(), "usage: bcode sandbox SUBCOMMAND") || !strings.Contains(e.String(), "  build [--image REF]") {
		t.Errorf("exit %d: %s", code, e.String())
	}
	if code := run([]string{"sandbox", "build", "extra"}, &o, &e); code != 2 {
		t.Errorf("extra argument: exit %d", code)
	}
}

func TestSandboxGoCacheCommand(t *testing.T) {
	var e bytes.Buffer
	if code := run([]string{"sandbox", "gocache"}, &bytes.Buffer{}, &e); code != 2 || !strings.Contains(e.String(), "-upper is required") {
		t.Errorf("exit %d: %s", code, e.String())
	}
}
