package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// offlinePhrase is how the go command says it wanted the network.
const offlinePhrase = "module lookup disabled by GOPROXY=off"

var (
	downloading     = regexp.MustCompile(`(?m)^go: downloading (\S+) (v\S+)$`)
	cacheReadOnly   = regexp.MustCompile(`/cache/download/([^:\s]+):? .*read-only file system`)
	moduleAtVersion = regexp.MustCompile(`([A-Za-z0-9][A-Za-z0-9._~/-]*)@(v[0-9][^\s:]*|latest|upgrade|patch)`)
	providingPkg    = regexp.MustCompile(`providing package ([^\s:]+)`)
)

// ExplainOffline rewrites each line in which the go command reports it
// could not get a module because the sandbox runs offline, so the message
// says which dependency was missing, why, and what to do. Go reports it in
// one of two ways: "module lookup disabled by GOPROXY=off", or — when it
// first tries to lock the download in the read-only module cache — a
// "read-only file system" error below the cache's download directory,
// after a "go: downloading M V" line. Other lines are returned unchanged;
// out is not modified.
func ExplainOffline(out []byte) []byte {
	ro := bytes.Contains(out, []byte("read-only file system")) && bytes.Contains(out, []byte("/cache/download/"))
	if !bytes.Contains(out, []byte(offlinePhrase)) && !ro {
		return out
	}
	var fetched []string
	for _, m := range downloading.FindAllStringSubmatch(string(out), -1) {
		fetched = append(fetched, m[1]+"@"+m[2])
	}
	lines := strings.SplitAfter(string(out), "\n")
	var b strings.Builder
	for _, line := range lines {
		body := strings.TrimRight(line, "\n")
		roLine := cacheReadOnly.FindStringSubmatch(body)
		if !strings.Contains(body, offlinePhrase) && roLine == nil {
			b.WriteString(line)
			continue
		}
		what := "a module"
		if roLine != nil {
			if len(fetched) > 0 {
				what = "module " + strings.Join(fetched, ", ")
			} else {
				mod, _, _ := strings.Cut(roLine[1], "/@v/")
				what = "module " + mod
			}
		} else if m := moduleAtVersion.FindStringSubmatch(body); m != nil {
			what = "module " + m[1] + "@" + m[2]
		} else if m := providingPkg.FindStringSubmatch(body); m != nil {
			what = "the module providing package " + m[1]
		}
		fmt.Fprintf(&b, "bcode sandbox: %s was not prefetched: the sandbox has no network (GOPROXY=off) and sees only the task's modules (those the base commit's go.sum lists or the user approved), read-only. "+
			"After each turn the host runs 'go mod download' for what go.mod needs if the base commit's go.sum lists it; any other module waits for the user's approval (bcode task approve-module). [go: %s]",
			what, strings.TrimSpace(body))
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

// PrefetchGo downloads every module the Go module in dir needs into the
// host's module cache, with the user's own environment (GOPROXY, GOPRIVATE,
// GONOSUMDB, netrc credentials all apply; GOTOOLCHAIN is local): this runs
// on the host, before the container, which will see the cache read-only
// and offline. A directory without go.mod needs nothing.
func PrefetchGo(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir + "/go.mod"); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download")
	cmd.Dir = dir
	// The go.mod may be the agent's: its toolchain line must not make the
	// host download and run another Go (inside, GOTOOLCHAIN=local too, so
	// such a module fails the same way in both places).
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	scratch.Own(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("prefetching Go modules in %s (go mod download): %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// WarmGoCache compiles, on the host, everything the Go module in dir needs
// to build and test — the standard library included — into the build cache
// cache, without running any of it (go build and go test -c). That cache
// is then a Runner's GoCacheSeed. Run it on the base commit: it is the
// user's code, and its outputs are what the sandbox may read.
func WarmGoCache(ctx context.Context, dir, cache string) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("warming the Go cache: %w", err)
	}
	out, err := scratch.MkdirTemp("bcode-warm-*")
	if err != nil {
		return fmt.Errorf("warming the Go cache: %w", err)
	}
	defer os.RemoveAll(out)
	for _, args := range [][]string{{"build", "./..."}, {"test", "-c", "-o", out, "./..."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-mod=mod")
		scratch.Own(cmd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("warming the Go cache (go %s in %s): %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
		}
	}
	return nil
}
