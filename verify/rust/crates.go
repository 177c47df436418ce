package rust

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// maxManifests caps the Cargo.toml files a walk reads.
const maxManifests = 5000

// crate is one Cargo package of the tree.
type crate struct {
	dir      string   // relative to the root, "." for the root
	name     string   // [package] name
	pathDeps []string // the crate directories its path dependencies name
}

// manifest is what bcode reads of a Cargo.toml.
type manifest struct {
	Package *struct {
		Name string `toml:"name"`
	} `toml:"package"`
	Dependencies      map[string]any `toml:"dependencies"`
	DevDependencies   map[string]any `toml:"dev-dependencies"`
	BuildDependencies map[string]any `toml:"build-dependencies"`
}

// findCrates reads every Cargo.toml below root (build output, VCS and
// hidden directories left out) and returns its packages; workspace roots
// without a [package] are not crates. Members are found by the walk, so a
// workspace's member list needs no reading.
func findCrates(root string) ([]crate, error) {
	var out []crate
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (n == "target" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "Cargo.toml" || !d.Type().IsRegular() {
			return nil
		}
		if len(out) >= maxManifests {
			return errTooManyManifests
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		c, ok := readManifest(p, filepath.ToSlash(rel))
		if ok {
			out = append(out, c)
		}
		return nil
	})
	if errors.Is(err, errTooManyManifests) {
		err = nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out, err
}

var errTooManyManifests = errors.New("rust adapter: too many Cargo.toml files")

// readManifest reads the package of one Cargo.toml; a manifest that does
// not parse or has no [package] is no crate (cargo says why when it runs).
func readManifest(file, dir string) (crate, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return crate{}, false
	}
	var m manifest
	if toml.Unmarshal(data, &m) != nil || m.Package == nil {
		return crate{}, false
	}
	c := crate{dir: dir, name: m.Package.Name}
	for _, deps := range []map[string]any{m.Dependencies, m.DevDependencies, m.BuildDependencies} {
		for _, v := range deps {
			t, ok := v.(map[string]any)
			if !ok {
				continue
			}
			if p, ok := t["path"].(string); ok && !path.IsAbs(p) {
				c.pathDeps = append(c.pathDeps, path.Clean(path.Join(dir, p)))
			}
		}
	}
	return c, true
}

// units lists a crate's test targets on disk as Test.Package names them.
func units(root string, c crate) []string {
	var out []string
	exists := func(rel string) bool {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(inCrate(c.dir, rel))))
		return err == nil && fi.Mode().IsRegular()
	}
	for _, rel := range []string{"src/lib.rs", "src/main.rs"} {
		if exists(rel) {
			out = append(out, inCrate(c.dir, rel))
		}
	}
	for _, area := range []string{"src/bin", "tests"} {
		entries, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(inCrate(c.dir, area))))
		for _, e := range entries {
			switch {
			case e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".rs"):
				out = append(out, inCrate(c.dir, area+"/"+e.Name()))
			case e.IsDir() && exists(area+"/"+e.Name()+"/main.rs"):
				out = append(out, inCrate(c.dir, area+"/"+e.Name()+"/main.rs"))
			}
		}
	}
	return out
}

// crateOf returns the crate whose directory holds p most closely.
func crateOf(crates []crate, p string) (crate, bool) {
	best, found := crate{}, false
	for _, c := range crates {
		if c.dir == "." || p == c.dir || strings.HasPrefix(p, c.dir+"/") {
			if !found || len(c.dir) > len(best.dir) || best.dir == "." {
				best, found = c, true
			}
		}
	}
	return best, found
}

// exists reports whether rel (slash-separated) is a regular file below root.
func exists(root, rel string) bool {
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil && fi.Mode().IsRegular()
}
