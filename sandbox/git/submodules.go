package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// maxSubmoduleDepth bounds submodules inside submodules (a repository that
// names itself as its own submodule would otherwise never end).
const maxSubmoduleDepth = 4

// ExportWithSubmodules is Export, with every submodule filled in at the
// commit the tree records for it, recursively: what `git submodule update
// --init --recursive` would check out, for repositories whose build needs
// them. A submodule's objects come from the superproject's
// .git/modules/<name> (where `git submodule update` keeps them), else from
// bcode's own clone of its URL when that URL is a local path or a
// file:// URL (the only case where bcode allows the file protocol; network
// URLs are never fetched). A submodule found nowhere stays an empty
// directory, as Export leaves it. Nothing of a submodule's configuration
// runs: every git command is hardened as the superproject's are, and its
// filter, diff and merge drivers are neutralized.
//
// Names and URLs come from trusted's .gitmodules, not rev's: rev may be an
// agent's commit, and a .gitmodules it wrote could name any repository on
// the host (a file:// URL to the user's other projects) and so copy it into
// a snapshot the agent's tests read. trusted is the base commit the user
// chose; a submodule the agent added has no URL there and stays empty. For
// the same reason a repository planted at the submodule's path in the
// working tree is never read: only the superproject's own .git/modules is.
func (r *Repo) ExportWithSubmodules(ctx context.Context, rev, trusted, dir string) error {
	return r.exportRecursive(ctx, rev, trusted, dir, 0)
}

func (r *Repo) exportRecursive(ctx context.Context, rev, trusted, dir string, depth int) error {
	links, err := r.export(ctx, rev, dir)
	if err != nil || len(links) == 0 || depth >= maxSubmoduleDepth {
		return err
	}
	mods, err := r.submoduleConfig(ctx, trusted)
	if err != nil {
		return err
	}
	for _, l := range links {
		m, ok := mods[l.path]
		if !ok {
			m = submodule{name: l.path}
		}
		sub, cleanup, err := r.submoduleSource(ctx, m, l.path, l.id)
		if err != nil {
			return fmt.Errorf("submodule %s: %w", l.path, err)
		}
		if sub == nil {
			continue
		}
		// Below the first level the commit itself came from a trusted
		// source (the user's .git/modules or the base's URL), and so does
		// its .gitmodules.
		err = sub.exportRecursive(ctx, l.id, l.id, filepath.Join(dir, filepath.FromSlash(l.path)), depth+1)
		cleanup()
		if err != nil {
			return fmt.Errorf("submodule %s at %s: %w", l.path, l.id, err)
		}
	}
	return nil
}

// submodule is one entry of .gitmodules.
type submodule struct {
	name, url string
}

// submoduleConfig reads .gitmodules of rev (not of the working tree) by
// path; a tree without one gives an empty map.
func (r *Repo) submoduleConfig(ctx context.Context, rev string) (map[string]submodule, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	out, err := r.plumbing(ctx, invocation{args: []string{"config", "--null", "--blob", rev + ":.gitmodules", "--get-regexp", `^submodule\..*\.(path|url)$`}})
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && (ge.ExitCode == 1 || strings.Contains(ge.Stderr, "unable to resolve") || strings.Contains(ge.Stderr, "bad config")) {
			return map[string]submodule{}, nil // no .gitmodules, or none git can read
		}
		return nil, fmt.Errorf("reading .gitmodules of %s: %w", rev, err)
	}
	paths := map[string]string{} // name → path
	urls := map[string]string{}  // name → url
	for _, rec := range strings.Split(string(out), "\x00") {
		key, value, _ := strings.Cut(rec, "\n")
		rest, ok := strings.CutPrefix(key, "submodule.")
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(rest, ".path"):
			paths[strings.TrimSuffix(rest, ".path")] = value
		case strings.HasSuffix(rest, ".url"):
			urls[strings.TrimSuffix(rest, ".url")] = value
		}
	}
	mods := map[string]submodule{}
	for name, p := range paths {
		mods[p] = submodule{name: name, url: urls[name]}
	}
	return mods, nil
}

// submoduleSource finds a repository holding commit for the submodule at
// p. It returns nil when there is none; cleanup removes a clone made for
// it.
func (r *Repo) submoduleSource(ctx context.Context, m submodule, p, commit string) (*Repo, func(), error) {
	noop := func() {}
	if !validID(commit) {
		return nil, noop, fmt.Errorf("malformed commit id %q", commit)
	}
	var candidates []*Repo
	// A name is a path below .git/modules: refuse any that leaves it.
	common, err := r.commonDir(ctx)
	if err != nil {
		common = r.GitDir
	}
	if CheckPath(m.name) == nil {
		d := filepath.Join(common, "modules", filepath.FromSlash(m.name))
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			candidates = append(candidates, &Repo{Dir: d, GitDir: d, objectFormat: r.objectFormat, env: []string{"GIT_DIR=" + d}})
		}
	}
	for _, c := range candidates {
		if c.loadConfig(ctx) != nil {
			continue
		}
		if c.hasCommit(ctx, commit) {
			return c, noop, nil
		}
	}
	src, ok := localURL(m.url)
	if !ok {
		return nil, noop, nil
	}
	tmp, err := scratch.MkdirTemp("bcode-submodule-*")
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	clone := filepath.Join(tmp, "repo.git")
	// The file protocol is allowed for this one command, whose source is
	// the local repository .gitmodules names.
	if _, err := run(ctx, invocation{dir: tmp, args: []string{"-c", "protocol.file.allow=always", "clone", "--bare", "--quiet", "--no-local", "--", src, clone}}); err != nil {
		cleanup()
		return nil, noop, nil // not cloneable: left empty, as before
	}
	c := &Repo{Dir: clone, GitDir: clone, objectFormat: r.objectFormat, env: []string{"GIT_DIR=" + clone}}
	if c.loadConfig(ctx) != nil || !c.hasCommit(ctx, commit) {
		cleanup()
		return nil, noop, nil
	}
	return c, cleanup, nil
}

func (r *Repo) hasCommit(ctx context.Context, id string) bool {
	_, err := r.plumbing(ctx, invocation{args: []string{"cat-file", "-e", id + "^{commit}"}})
	return err == nil
}

// localURL accepts an absolute local path or a file:// URL naming one.
func localURL(u string) (string, bool) {
	if rest, ok := strings.CutPrefix(u, "file://"); ok {
		u = rest
	}
	if !filepath.IsAbs(u) || strings.ContainsAny(u, "\x00\n") {
		return "", false
	}
	return filepath.Clean(u), true
}
