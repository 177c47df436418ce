package agentbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	base, err := sandbox.CacheDir("sandbox-gocache")
	if err != nil {
		return "", fmt.Errorf("agentbackend: the sandbox's Go build cache (or set %s): %w", SeedEnv, err)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, hex.EncodeToString(sum[:8])), nil
}

// warmTimeout bounds warming one base's seed: a cold standard library on
// two loaded cores takes minutes.
const warmTimeout = 30 * time.Minute

// warmShares is the warm-up container's CPU weight while nothing waits for
// it (docker's default is 1024): it runs beside the agent's turns and
// yields the CPUs to them, until the gate waits for it.
const warmShares = 64

// WarmSeed compiles the base commit of repo into the seed cache, once per
// base commit and toolchain, inside a sandbox container made from tmpl —
// never on the host: the base may be a change nobody has read (`bcode
// check --sandbox docker`), and compiling it runs the C compiler over its
// cgo preamble (`#include "/etc/shadow"`, `#include "/dev/zero"`). The
// base is exported to a temporary directory (never the worktree, which
// holds the agent's edits); the modules its go.sum lists are fetched on
// the host first (FetchBaseKnown), and nothing else, and the container sees
// them alone (a module view); then `go build ./...`
// and `go test -c` run in a container with the seed mounted read-write as
// its GOCACHE, with the container's own limits, no network and the same
// environment the checks have, so their action IDs match. A base without
// go.mod at its root needs no Go cache.
//
// Processes that share the seed (runners of tasks on one repository) warm
// it one at a time: the first takes the seed's lock file, the others wait
// for it and then find the marker. A holder that dies releases the lock
// with its last file descriptor; what it compiled stays in the seed, so
// the next warm-up only compiles the rest.
func WarmSeed(ctx context.Context, tmpl docker.Config, repo, base, seed string) error {
	return warmSeed(ctx, tmpl, repo, base, seed, nil)
}

// warmSeed is WarmSeed, whose container starts at a low CPU weight (it runs
// beside the agent's turns) and gets the default one when urgent closes
// (the gate waits for it).
func warmSeed(ctx context.Context, tmpl docker.Config, repo, base, seed string, urgent <-chan struct{}) error {
	marker := warmMarker(tmpl, seed, base)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	unlock, err := lockSeed(ctx, seed)
	if err != nil {
		return fmt.Errorf("agentbackend: warming the Go cache: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(marker); err == nil {
		return nil // warmed by the process that held the lock
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
	if urgent != nil {
		select {
		case <-urgent: // waited for already (`bcode check --sandbox docker`)
		default:
			cfg.CPUShares = warmShares
		}
	}
	runner, err := docker.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("agentbackend: warming the Go cache: %w", err)
	}
	defer runner.Close()
	if urgent != nil {
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-urgent:
				_ = runner.SetCPUShares(ctx, 0) // best effort: at worst it stays slow
			case <-finished:
			}
		}()
	}
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

// warmMarker is the file that says the seed holds base compiled by this
// toolchain in this image: what decides the action IDs the gate will ask
// for. A new Go or a rebuilt image under the same name warms again (over
// the entries that still match).
func warmMarker(tmpl docker.Config, seed, base string) string {
	sum := sha256.Sum256([]byte(tmpl.Go.GOVERSION + "\x00" + tmpl.Go.GOROOT + "\x00" + tmpl.Image))
	return filepath.Join(seed, "bcode-warmed", hex.EncodeToString(sum[:6]), base)
}

// seedLockPoll is how often a process waiting for another's warm-up tries
// the lock again.
const seedLockPoll = 250 * time.Millisecond

// lockSeed takes the seed's warm-up lock (flock on a file in it), waiting
// until it is free or ctx ends.
func lockSeed(ctx context.Context, seed string) (func(), error) {
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(seed, "bcode-warm.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := tryLock(f)
		if err == nil {
			return func() { f.Close() }, nil // closing the file drops the lock
		}
		if !errors.Is(err, errLocked) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(seedLockPoll):
		}
	}
}

// lastLines is the end of a command's output, for an error a person reads.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
