package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// ErrNoIdentity: the runner's commands may see state no identity covers (a
// build cache they can write), so results it gave are not to be reused.
var ErrNoIdentity = errors.New("docker: no identity for a runner with a writable build cache")

// identity is what, besides the files of the worktree and the environment
// (which the gate's key reads by running `env` in the container), decides
// what a command sees: the image by its id (a rebuild under the same tag is
// another image), the user, the limits, and every mount but the worktree's
// by where it appears and what it holds.
type identity struct {
	Image   string            `json:"image"`
	User    string            `json:"user"`
	Memory  int64             `json:"memory"`
	CPUs    int64             `json:"nano_cpus"`
	Pids    int64             `json:"pids"`
	Disk    int64             `json:"disk"`
	Shm     int64             `json:"shm"`
	NoInit  bool              `json:"no_init"`
	Tmpfs   map[string]string `json:"tmpfs"`
	Mounts  []string          `json:"mounts"`
	Modules []string          `json:"modules,omitempty"`
}

// Identity names what a command of r sees, for the key of results reused
// across runs (verify.RunnerIdentity). The worktree is left out (the key
// names its files itself, and every attempt has its own path), and so are
// the host paths of the module view: the view is named by the module
// versions it holds. A runner whose commands share a writable build cache
// (Config.GoCacheDir) has none: ErrNoIdentity.
func (r *Runner) Identity(ctx context.Context) (string, error) {
	if r.cfg.GoCacheDir != "" {
		return "", ErrNoIdentity
	}
	img, err := r.e.Image(ctx, r.cfg.Image)
	if err != nil {
		return "", err
	}
	id := identity{
		Image: img.ID, User: r.user, Memory: r.cfg.MemoryBytes, CPUs: r.cfg.NanoCPUs, Pids: r.cfg.PidsLimit,
		Disk: r.DiskLimit(), Shm: ShmBytes, NoInit: r.cfg.NoInit, Tmpfs: r.tmpfs,
	}
	for _, m := range r.mounts {
		switch {
		case m.Source == r.cfg.Worktree && m.Target == r.cfg.Worktree:
			continue
		case m.Target == ModCacheTarget:
			mods, err := moduleVersions(m.Source)
			if err != nil {
				return "", fmt.Errorf("docker: the module view: %w", err)
			}
			id.Modules = mods
			id.Mounts = append(id.Mounts, fmt.Sprintf("%s <module view> %s ro=%t", m.Type, m.Target, m.ReadOnly))
		default:
			id.Mounts = append(id.Mounts, fmt.Sprintf("%s %s %s ro=%t", m.Type, m.Source, m.Target, m.ReadOnly))
		}
	}
	slices.Sort(id.Mounts)
	b, err := json.Marshal(id)
	return string(b), err
}

// moduleVersions are the module versions a module cache directory holds:
// the extracted module@version directories (not descended into) and the
// files of cache/download, by their paths under dir.
func moduleVersions(dir string) ([]string, error) {
	c, err := sandbox.OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []string
	err = c.WalkDir(".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		inDownload := rel == "cache" || rel == "cache/download" || strings.HasPrefix(rel, "cache/download/")
		switch {
		case rel == ".":
		case d.IsDir() && strings.Contains(d.Name(), "@") && !inDownload:
			out = append(out, rel+"/")
			return fs.SkipDir
		case !d.IsDir() && inDownload:
			out = append(out, rel)
		case d.IsDir() && strings.HasPrefix(rel, "cache/") && !inDownload:
			return fs.SkipDir // VCS checkouts: go resolves no module from them here
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
