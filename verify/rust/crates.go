package rust

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/bcode-dev/bcode/sandbox"
)

// maxManifests caps the Cargo.toml files a walk reads; maxManifestBytes
// caps each.
const (
	maxManifests     = 5000
	maxManifestBytes = 1 << 20
)

// crate is one Cargo package of the tree.
type crate struct {
	dir      string   // relative to the root, "." for the root
	name     string   // [package] name
	pathDeps []string // the crate directories its path dependencies name
	units    []string // its test targets on disk, as Test.Package names them
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

var errTooManyManifests = errors.New("rust adapter: too many Cargo.toml files")

// findCrates reads every Cargo.toml below root through the confined reader
// (build output, VCS and hidden directories left out) and returns its
// packages with their test targets; workspace roots without a [package]
// are not crates. Members are found by the walk, so a workspace's member
// list needs no reading.
func findCrates(root string) ([]crate, error) {
	conf, err := sandbox.OpenConfined(root)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	var out []crate
	err = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // an unreadable directory: nothing of ours in it
		}
		if d.IsDir() {
			n := d.Name()
			if p != "." && (n == "target" || n == "node_modules" || strings.HasPrefix(n, ".")) {
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
		if c, ok := readManifest(conf, p); ok {
			c.units = crateUnits(conf, c.dir)
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

// readManifest reads the package of one Cargo.toml; a manifest that does
// not parse or has no [package] is no crate (cargo says why when it runs).
func readManifest(conf *sandbox.Confined, file string) (crate, bool) {
	data, err := conf.ReadFile(file, maxManifestBytes)
	if err != nil {
		return crate{}, false
	}
	var m manifest
	if toml.Unmarshal(data, &m) != nil || m.Package == nil {
		return crate{}, false
	}
	dir := path.Dir(file)
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

// crateUnits lists a crate's test targets on disk: src/lib.rs,
// src/main.rs, src/bin/*, tests/*.rs and tests/*/main.rs.
func crateUnits(conf *sandbox.Confined, dir string) []string {
	isFile := func(rel string) bool {
		fi, err := conf.Lstat(inCrate(dir, rel))
		return err == nil && fi.Mode().IsRegular()
	}
	var out []string
	for _, rel := range []string{"src/lib.rs", "src/main.rs"} {
		if isFile(rel) {
			out = append(out, inCrate(dir, rel))
		}
	}
	for _, area := range []string{"src/bin", "tests"} {
		entries, _ := conf.ReadDir(inCrate(dir, area))
		for _, e := range entries {
			switch {
			case e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".rs"):
				out = append(out, inCrate(dir, area+"/"+e.Name()))
			case e.IsDir() && isFile(area+"/"+e.Name()+"/main.rs"):
				out = append(out, inCrate(dir, area+"/"+e.Name()+"/main.rs"))
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
