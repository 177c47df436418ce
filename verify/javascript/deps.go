package javascript

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// LockedProject is a project of a tree whose dependencies a lock file
// pins: its directory (slash-separated, relative; "." the root), its
// package.json and its package-lock.json, as the base commit has them.
type LockedProject struct {
	Dir            string
	Manifest, Lock []byte
}

// ErrNoNpm reports that npm, which installs a project's locked packages
// on the host, is not installed.
var ErrNoNpm = errors.New("javascript: npm is not installed (apt-get install npm): no project's packages can be installed")

// npmTimeout bounds one npm ci: a download of a project's whole
// dependency tree on a slow link.
const npmTimeout = 15 * time.Minute

// Packages installs locked projects' dependencies on the host, once per
// lock: each install is `npm ci --ignore-scripts` of the project's
// package.json and package-lock.json alone (no .npmrc, no scripts: the
// packages' install scripts never run, and nothing of the tree but the two
// files is read) into a directory of Dir named by their hash. The agent's
// change never reaches it: the files come from the base commit, and the
// sandbox shows the result read-only.
type Packages struct {
	// Dir is the cache; empty means os.UserCacheDir()/bcode/node-packages.
	Dir string
	// Runner runs npm on the host (the registry is reachable from the
	// host, never from the sandbox).
	Runner sandbox.Runner
	// Npm is the npm command; empty means "npm".
	Npm string
}

// Install returns, for each project, the node_modules directory holding
// its locked packages, installing the ones not in the cache yet.
func (p *Packages) Install(ctx context.Context, projects []LockedProject) (map[string]string, error) {
	dir, err := p.dir()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, pr := range projects {
		sum := sha256.New()
		for _, b := range [][]byte{pr.Manifest, {0}, pr.Lock} {
			sum.Write(b)
		}
		key := hex.EncodeToString(sum.Sum(nil))[:32]
		final := filepath.Join(dir, key)
		if fi, err := os.Stat(filepath.Join(final, "node_modules")); err == nil && fi.IsDir() {
			out[pr.Dir] = filepath.Join(final, "node_modules")
			continue
		}
		if err := p.install(ctx, dir, final, pr); err != nil {
			return out, fmt.Errorf("javascript: installing the packages of %s from its package-lock.json: %w", pr.Dir, err)
		}
		out[pr.Dir] = filepath.Join(final, "node_modules")
	}
	return out, nil
}

func (p *Packages) dir() (string, error) {
	if p.Dir != "" {
		return p.Dir, os.MkdirAll(p.Dir, 0o755)
	}
	d, err := sandbox.CacheDir("node-packages")
	if err != nil {
		return "", fmt.Errorf("javascript: installed packages: %w", err)
	}
	return d, os.MkdirAll(d, 0o755)
}

// install runs npm ci in a fresh directory beside final and renames it
// into place: a killed install leaves no half tree under the key.
func (p *Packages) install(ctx context.Context, dir, final string, pr LockedProject) error {
	tmp, err := os.MkdirTemp(dir, ".install-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pr.Manifest, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "package-lock.json"), pr.Lock, 0o644); err != nil {
		return err
	}
	npm := p.Npm
	if npm == "" {
		npm = "npm"
	}
	res, err := p.Runner.Run(ctx, sandbox.Command{
		Dir:     tmp,
		Args:    []string{npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", "--cache", filepath.Join(dir, ".npm-cache")},
		Timeout: npmTimeout,
		Stdout:  io.Discard,
		Stderr:  io.Discard,
	})
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return ErrNoNpm
	case err != nil:
		return err
	case res.TimedOut:
		return fmt.Errorf("npm ci did not finish in %s", npmTimeout)
	case res.ExitCode != 0:
		return fmt.Errorf("npm ci failed: %s", lastLines(string(res.Stdout), 5))
	}
	if err := os.Rename(tmp, final); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(final); serr == nil {
			return nil // another run installed the same lock first
		}
		return err
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LockedProjects picks, from the paths of a tree, the projects whose
// package.json sits beside a package-lock.json, outside node_modules,
// sorted by directory.
func LockedProjects(paths []string) []string {
	have := map[string]bool{}
	for _, p := range paths {
		have[p] = true
	}
	var out []string
	for _, p := range paths {
		if path.Base(p) != "package-lock.json" || strings.Contains("/"+p, "/node_modules/") {
			continue
		}
		if have[path.Join(path.Dir(p), "package.json")] {
			out = append(out, path.Dir(p))
		}
	}
	sort.Strings(out)
	return out
}
