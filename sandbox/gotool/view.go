package gotool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/module"
)

// ModuleView makes dst a module cache (the go command's GOMODCACHE layout)
// that holds exactly the module versions of vs and nothing else of the
// user's cache: for each, cache/download/<path>/@v/<version>.mod and
// .info, and when its go.sum entry lists the zip (Sum.Zip, or no entry at
// all) the .zip, .ziphash and the extracted <path>@<version> tree. Files
// are hard links to tc.GOMODCACHE's (copies where the two directories are
// on different filesystems), so a view costs directory entries, not disk.
//
// The sandbox mounts a view read-only as the container's GOMODCACHE in
// place of the user's whole cache, which also holds the modules of every
// other project the user built, private ones included. ModuleView may be
// called again on the same dst with more versions (a module the user
// approved mid-task); what is there stays. It returns the versions the
// host cache lacks (left out of the view: the go command inside says they
// were not prefetched).
func (tc *Toolchain) ModuleView(dst string, vs map[module.Version]Sum) ([]module.Version, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("gotool: module view: %w", err)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		return nil, fmt.Errorf("gotool: module view: %w", err)
	}
	var missing []module.Version
	for _, v := range sortedKeys(vs) {
		if Check(v) != nil {
			continue
		}
		s, listed := vs[v]
		zip := !listed || s.Zip != "" || s.GoMod == ""
		ok, err := tc.linkVersion(dst, v, zip)
		if err != nil {
			return missing, err
		}
		if !ok {
			missing = append(missing, v)
		}
	}
	return missing, nil
}

// linkVersion puts v's files into the view at dst; false when the host
// cache lacks them.
func (tc *Toolchain) linkVersion(dst string, v module.Version, zip bool) (bool, error) {
	p, err := module.EscapePath(v.Path)
	if err != nil {
		return false, err
	}
	ver, err := module.EscapeVersion(v.Version)
	if err != nil {
		return false, err
	}
	rel := filepath.Join("cache", "download", filepath.FromSlash(p), "@v")
	need := []string{ver + ".mod"}
	optional := []string{ver + ".info"}
	if zip {
		need = append(need, ver+".zip")
		optional = append(optional, ver+".ziphash")
	}
	for _, name := range need {
		if fi, err := os.Lstat(filepath.Join(tc.GOMODCACHE, rel, name)); err != nil || !fi.Mode().IsRegular() {
			return false, nil
		}
	}
	if err := os.MkdirAll(filepath.Join(dst, rel), 0o755); err != nil {
		return false, fmt.Errorf("gotool: module view: %w", err)
	}
	for _, name := range append(need, optional...) {
		err := linkFile(filepath.Join(tc.GOMODCACHE, rel, name), filepath.Join(dst, rel, name))
		if err != nil && !(errors.Is(err, fs.ErrNotExist) && slices.Contains(optional, name)) {
			return false, fmt.Errorf("gotool: module view of %s: %w", String(v), err)
		}
	}
	if !zip {
		return true, nil
	}
	tree := filepath.FromSlash(p) + "@" + ver
	if fi, err := os.Lstat(filepath.Join(tc.GOMODCACHE, tree)); err != nil || !fi.IsDir() {
		// Zipped but never extracted: the go command extracts it on first
		// use, which a read-only view cannot take. Say it is missing.
		return false, nil
	}
	if err := linkTree(filepath.Join(tc.GOMODCACHE, tree), filepath.Join(dst, tree)); err != nil {
		return false, fmt.Errorf("gotool: module view of %s: %w", String(v), err)
	}
	return true, nil
}

// linkTree links every regular file below src into the same place below
// dst. Links and other special files are left out: a module zip holds
// none, so the host cache should not either.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			return linkFile(path, out)
		}
		return nil
	})
}

// linkFile hard-links src at dst, or copies it when the two are on
// different filesystems; a dst already there is kept.
func linkFile(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func sortedKeys(vs map[module.Version]Sum) []module.Version {
	out := make([]module.Version, 0, len(vs))
	for v := range vs {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b module.Version) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out
}
