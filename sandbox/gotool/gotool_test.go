package gotool

import (
	"context"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
)

// TestOfflineEnvIsBcodes: whatever the user's environment says (flags, a
// proxy, cgo), the environment for hostile code is bcode's own.
func TestOfflineEnvIsBcodes(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs go on PATH")
	}
	t.Setenv("GOFLAGS", "-toolexec=/tmp/evil")
	t.Setenv("GOPROXY", "http://127.0.0.1:1")
	t.Setenv("CGO_ENABLED", "1")
	t.Setenv("GOTOOLCHAIN", "go1.99.0")
	tc, err := Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	env := tc.OfflineEnv("-mod=readonly")
	for _, want := range []string{"CGO_ENABLED=0", "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local", "GOENV=off", "GOWORK=off", "HOME=" + tc.Home, "GOCACHE=" + tc.Cache} {
		if !slices.Contains(env, want) {
			t.Errorf("offline environment lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "/tmp/evil") || strings.Contains(kv, "127.0.0.1:1") || strings.Contains(kv, "go1.99") {
			t.Errorf("the user's setting leaked into the offline environment: %s", kv)
		}
	}
	// The user's proxy is kept for Fetch alone, and GOFLAGS is cleared there.
	fenv := tc.fetchEnv()
	if !slices.Contains(fenv, "GOPROXY=http://127.0.0.1:1") || !slices.Contains(fenv, "GOFLAGS=") || slices.Contains(fenv, "GOFLAGS=-toolexec=/tmp/evil") {
		t.Errorf("fetch environment: %q", fenv)
	}
}

// TestToolExecLimits: the -toolexec prefix really sets the address-space
// limit of the process it starts.
func TestToolExecLimits(t *testing.T) {
	if runtime.GOOS != "linux" || prlimitPath() == "" {
		t.Skip("prlimit(1) is Linux's util-linux")
	}
	te := ToolExec(Limits{MemoryBytes: 256 << 20, CPUSeconds: 5})
	args := append(strings.Fields(te), "sh", "-c", "ulimit -v; ulimit -t")
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "262144" || got[1] != "5" {
		t.Errorf("limits inside: %q, want 262144 KiB and 5 s", out)
	}
}

func TestWantedAndParseSum(t *testing.T) {
	gomod := []byte(`module example.com/app

go 1.22

require (
	example.com/a v1.0.0
	example.com/b v1.2.3 // indirect
)

replace example.com/a => example.com/fork v1.0.1

replace example.com/local => ./local
`)
	gosum := []byte(`example.com/c v0.1.0 h1:aaa=
example.com/c v0.1.0/go.mod h1:bbb=
example.com/d v0.2.0/go.mod h1:ccc=
example.com/bad latest h1:ddd=
-flag v1.0.0 h1:eee=
garbage
`)
	got, err := Wanted(gomod, gosum)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range got {
		names = append(names, String(v))
	}
	want := []string{"example.com/a@v1.0.0", "example.com/b@v1.2.3", "example.com/c@v0.1.0", "example.com/d@v0.2.0", "example.com/fork@v1.0.1"}
	if !slices.Equal(names, want) {
		t.Errorf("Wanted = %q, want %q", names, want)
	}
	sums := ParseSum(gosum)
	if s := sums[module.Version{Path: "example.com/c", Version: "v0.1.0"}]; s.Zip != "h1:aaa=" || s.GoMod != "h1:bbb=" {
		t.Errorf("c: %+v", s)
	}
	if s := sums[module.Version{Path: "example.com/d", Version: "v0.2.0"}]; s.Zip != "" || s.GoMod != "h1:ccc=" {
		t.Errorf("d: %+v", s)
	}
	if len(sums) != 2 {
		t.Errorf("ParseSum kept invalid lines: %+v", sums)
	}
}
