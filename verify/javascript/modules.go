package javascript

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/bcode-dev/bcode/sandbox"
)

// linkModules gives the snapshot in dir the dependencies the user
// installed in their checkout: for every package.json of the snapshot
// whose directory has no node_modules, a symbolic link to the checkout's
// node_modules at the same place, when there is one. A snapshot comes
// from git, and node_modules is never committed, so without this a test
// that imports an installed package cannot load on either side. An
// agent's change has no checkout: Modules, the base's locked packages,
// serve it instead. A node_modules the tree has is left alone.
//
// A snapshot is walked once: every run of its tests (each repeat, each
// project) asks again, and the answer cannot change.
func (a *Adapter) linkModules(dir string) error {
	if a.Checkout == "" && len(a.Modules) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.linked[dir] {
		return nil
	}
	if err := a.linkAll(dir); err != nil {
		return err
	}
	if a.linked == nil {
		a.linked = map[string]bool{}
	}
	a.linked[dir] = true
	return nil
}

// linkAll links every project of the snapshot in dir (linkModules).
func (a *Adapter) linkAll(dir string) error {
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return err
	}
	var projects []string
	err = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil // an unreadable corner is not the whole tree
		case d.IsDir() && p != "." && skipDir(d.Name()):
			return fs.SkipDir
		case !d.IsDir() && d.Name() == "package.json":
			projects = append(projects, path.Dir(p))
		}
		return nil
	})
	conf.Close()
	if err != nil {
		return err
	}
	for _, p := range projects {
		if err := a.linkProject(dir, p); err != nil {
			return err
		}
	}
	return nil
}

// linkProject links the node_modules of project p (a slash path relative
// to the root) into the snapshot, if the snapshot has none: Modules' for
// p, else the checkout's when it has one.
func (a *Adapter) linkProject(dir, p string) error {
	// Modules' directories are where the runner's commands see them (a
	// container's path, say): linked as they are. A checkout's are the
	// host's, and linked when there.
	from, ok := a.Modules[p]
	if !ok {
		if a.Checkout == "" {
			return nil
		}
		from = filepath.Join(a.Checkout, filepath.FromSlash(p), "node_modules")
		if fi, err := os.Stat(from); err != nil || !fi.IsDir() {
			return nil
		}
	}
	to := filepath.Join(dir, filepath.FromSlash(p), "node_modules")
	if cur, err := os.Readlink(to); err == nil && cur == from {
		return nil // linked by an earlier run
	}
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		if !ok {
			return nil // the user's tree's own
		}
		// An agent's tree holding packages of its own (committed, or a
		// link): the base's locked ones replace them on both sides, so no
		// package the change planted runs.
		if err := os.RemoveAll(to); err != nil {
			return err
		}
	}
	if err := os.Symlink(from, to); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
