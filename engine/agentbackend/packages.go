package agentbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/javascript"
)

// maxLockBytes caps a package.json or package-lock.json read from the
// base (engine/check reads them with the same cap).
const maxLockBytes = 64 << 20

// agentContainer completes the agent's container config: its worktree,
// bcode-agent, the task's labels, and the base's locked JavaScript
// packages (packageMounts). A package the host could not install is a
// warning for the agent's log, not a failed attempt: the tests that need
// it then fail inside, as they would without bcode.
func (a *Agent) agentContainer(ctx context.Context, dcfg *docker.Config, in agent.AttemptInput) []error {
	dcfg.Worktree = in.Worktree
	dcfg.Toolchains = append(dcfg.Toolchains, docker.Mount{Source: a.opts.AgentBinary, Target: AgentPath})
	dcfg.Labels = docker.OwnerLabels(sandbox.Owner{Task: in.Task.ID, Fence: in.Lease.Fence, Attempt: in.Attempt.Number})
	mounts, err := a.packageMounts(ctx, in.Task, in.Worktree)
	dcfg.Exposed = append(dcfg.Exposed, mounts...)
	if err != nil {
		return []error{err}
	}
	return nil
}

// packageMounts installs on the host (javascript.Packages: `npm ci
// --ignore-scripts` into a cache, once per lock; the registry is reachable
// from the host, never from the container) the packages that the base
// commit's lock files pin, and returns the read-only mounts that show each
// project's at <worktree>/<project>/node_modules, where node resolves them
// from the worktree, as the gate's snapshot links them. They come from the
// base, as the task's config does: the agent's edits to package.json or
// package-lock.json change nothing installed, and its own node_modules
// (committed, or made in an earlier attempt) is hidden under the mount.
func (a *Agent) packageMounts(ctx context.Context, t engine.Task, worktree string) ([]docker.Mount, error) {
	projects, err := baseLockedProjects(ctx, t.Repo, t.Base)
	if err != nil || len(projects) == 0 {
		return nil, err
	}
	p := a.opts.Packages
	if p == nil {
		p = &javascript.Packages{Runner: host.New()}
	}
	modules, err := p.Install(ctx, projects)
	var mounts []docker.Mount
	for _, pr := range projects {
		dir, ok := modules[pr.Dir]
		if !ok {
			continue
		}
		rel := path.Join(pr.Dir, "node_modules")
		if perr := mountPoint(worktree, rel); perr != nil {
			err = errors.Join(err, perr)
			continue
		}
		mounts = append(mounts, docker.Mount{Source: dir, Target: filepath.Join(worktree, filepath.FromSlash(rel))})
	}
	if err != nil {
		return mounts, fmt.Errorf("the base's locked packages: %w: the agent's container goes without those", err)
	}
	return mounts, nil
}

// mountPoint makes rel (slash-separated, below worktree) fit to mount a
// directory on: a symbolic link or a file the worktree holds there (the
// agent's) is removed, so the mount lands at the path the worktree names
// and not where a link points; a directory is left, the mount hides it.
// Everything is resolved inside the worktree (os.Root): a project
// directory the agent turned into a link out of it is refused, and
// nothing outside is touched.
func mountPoint(worktree, rel string) error {
	root, err := os.OpenRoot(worktree)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the mount point %s: %w", rel, err)
	}
	return root.Remove(rel)
}

// baseLockedProjects are the projects of repo's base commit whose
// package.json sits beside a package-lock.json, with both files as the
// base has them (javascript.LockedProjects).
func baseLockedProjects(ctx context.Context, repo, base string) ([]javascript.LockedProject, error) {
	r, err := git.Open(ctx, repo)
	if err != nil {
		return nil, err
	}
	files, err := r.ListTree(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("listing the base commit: %w", err)
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	var projects []javascript.LockedProject
	for _, dir := range javascript.LockedProjects(paths) {
		manifest, err1 := r.ShowFile(ctx, base, path.Join(dir, "package.json"))
		lock, err2 := r.ShowFile(ctx, base, path.Join(dir, "package-lock.json"))
		if err1 != nil || err2 != nil || len(manifest) > maxLockBytes || len(lock) > maxLockBytes {
			continue
		}
		projects = append(projects, javascript.LockedProject{Dir: dir, Manifest: manifest, Lock: lock})
	}
	return projects, nil
}
