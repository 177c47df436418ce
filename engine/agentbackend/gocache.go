package agentbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

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

// WarmSeed compiles the base commit of repo (exported to a temporary
// directory, never the worktree: that holds the agent's edits, which must
// not be built on the host) into the seed cache, once per base commit. A
// base without go.mod at its root needs no Go cache.
func WarmSeed(ctx context.Context, repo, base, seed string) error {
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
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return nil
	}
	if err := docker.PrefetchGo(ctx, dir); err != nil {
		return err
	}
	if err := docker.WarmGoCache(ctx, dir, seed); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o644)
}
