package check

import (
	"context"
	"fmt"
	"path"
	"sort"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/javascript"
)

// maxLockBytes caps a package.json or package-lock.json read from the base.
const maxLockBytes = 64 << 20

// lockedPackages installs, on the host, the packages the base commit's
// lock files pin (javascript.Packages), for a change that is not the
// user's own checkout: an agent's task, or a check in a sandbox. It
// returns each project's node_modules and a note when some could not be
// installed (their tests then run without packages, as they would have).
// A base without a package-lock.json costs one tree listing.
func lockedPackages(ctx context.Context, repo *git.Repo, base string, p *javascript.Packages) (map[string]string, string) {
	if base == "" {
		b, err := repo.DefaultBase(ctx)
		if err != nil {
			return nil, ""
		}
		base = b
	}
	files, err := repo.ListTree(ctx, base)
	if err != nil {
		return nil, ""
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	var projects []javascript.LockedProject
	for _, dir := range javascript.LockedProjects(paths) {
		manifest, err1 := repo.ShowFile(ctx, base, path.Join(dir, "package.json"))
		lock, err2 := repo.ShowFile(ctx, base, path.Join(dir, "package-lock.json"))
		if err1 != nil || err2 != nil || len(manifest) > maxLockBytes || len(lock) > maxLockBytes {
			continue
		}
		projects = append(projects, javascript.LockedProject{Dir: dir, Manifest: manifest, Lock: lock})
	}
	if len(projects) == 0 {
		return nil, ""
	}
	if p == nil {
		p = &javascript.Packages{Runner: host.New()}
	}
	modules, err := p.Install(ctx, projects)
	if err != nil {
		return modules, fmt.Sprintf("%v: the tests of those projects run without their packages", err)
	}
	return modules, ""
}

// expose shows the installed packages to a sandbox's runners, read-only,
// when the sandbox does not see the host's files already, and returns the
// sandbox and each project's packages where its commands find them.
func expose(sb sandbox.Sandbox, modules map[string]string) (sandbox.Sandbox, map[string]string) {
	ex, ok := sb.(sandbox.Exposer)
	if !ok || len(modules) == 0 {
		return sb, modules
	}
	projects := make([]string, 0, len(modules))
	for p := range modules {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	dirs := make([]string, len(projects))
	for i, p := range projects {
		dirs[i] = modules[p]
	}
	sb, at := ex.Expose(dirs...)
	seen := make(map[string]string, len(projects))
	for i, p := range projects {
		seen[p] = at[i]
	}
	return sb, seen
}
