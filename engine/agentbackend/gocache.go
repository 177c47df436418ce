package agentbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// SeedEnv names the seed build cache directory explicitly (tests share one
// across repositories; a user may move it to a bigger disk).
const SeedEnv = "BCODE_SANDBOX_GOCACHE"

// SeedDir is the seed build cache of one repository, under the user's
// cache directory. One per repository, not one for all: the container can
// read the whole seed, so a shared one would show the agent what every
// other project compiled into it.
func SeedDir(repo string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("agentbackend: no cache directory for the sandbox's Go build cache (set %s): %w", SeedEnv, err)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "bcode", "sandbox-gocache", hex.EncodeToString(sum[:8])), nil
}

// warmTimeout bounds warming one base's seed: a cold standard library on
// two loaded cores takes minutes.
const warmTimeout = 30 * time.Minute

// WarmSeed compiles the base commit of repo into the seed cache, once per
// base commit, inside a sandbox container made from tmpl — never on the
// host: the base may be a change nobody has read (`bcode check --sandbox
// docker`), and compiling it runs the C compiler over its cgo preamble
// (`#include "/etc/shadow"`, `#include "/dev/zero"`). The base is exported
// to a temporary directory (never the worktree, which holds the agent's
// edits); the modules its go.sum lists are fetched on the host first
// (FetchBaseKnown), and nothing else, and the container sees them alone
// (a module view); then `go build ./...` and `go test
// -c` run in a container with the seed mounted read-write as its GOCACHE,
// with the container's own limits, no network and the same environment the
// checks have, so their action IDs match. A base without go.mod at its
// root needs no Go cache.
func WarmSeed(ctx context.Context, tmpl docker.Config, repo, base, seed string) error {
	marker := filepath.Join(seed, "bcode-warmed", base)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	r, err := git.Open(ctx, repo)
	if err != nil {
		return err
	}
	dir, err := scratch.MkdirTemp("bcode-warm-base-*")
	if err != nil {
		return fmt.Errorf("agentbackend: warming the Go cache: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := r.Export(ctx, base, dir); err != nil {
		return fmt.Errorf("agentbackend: exporting the base for the Go cache: %w", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "go.mod")); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	sums, err := BaseSums(ctx, repo, base)
	if err != nil {
		return err
	}
	if err := FetchBaseKnown(ctx, sums); err != nil {
		return fmt.Errorf("agentbackend: fetching the base's modules for the Go cache: %w", err)
	}
	view, err := newModuleView(ctx, sums)
	if err != nil {
		return err
	}
	defer view.Close()
	cfg := tmpl
	cfg.Worktree, cfg.GoCacheDir, cfg.ModCache, cfg.DiskDiscard = dir, seed, view.dir, true
	cfg.GoCacheSeed, cfg.GoCacheProg, cfg.Env = "", nil, nil
	runner, err := docker.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("agentbackend: warming the Go cache: %w", err)
	}
	defer runner.Close()
	for _, args := range [][]string{{"go", "build", "./..."}, {"go", "test", "-c", "-o", "/tmp", "./..."}} {
		res, err := runner.Run(ctx, sandbox.Command{Dir: dir, Args: args, Timeout: warmTimeout, OutputLimit: 8 << 10})
		if err != nil {
			return fmt.Errorf("agentbackend: warming the Go cache (%s in the sandbox): %w", strings.Join(args, " "), err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("agentbackend: warming the Go cache (%s in the sandbox): exit %d: %s", strings.Join(args, " "), res.ExitCode, lastLines(res.Stderr, 5))
		}
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o644)
}

// lastLines is the end of a command's output, for an error a person reads.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
