package golang

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"hash"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// The two `go list` calls of a module (the changed packages, then export
// data of what they import) are most of a warm run, and a save rarely
// changes what they print. Their output is kept across runs, each list
// keyed by what it is derived from:
//
//   - both: the runner, the toolchain and the settings `go env` reports,
//     the module's go.mod, go.sum, vendor/modules.txt and go.work;
//   - the changed packages: the names of their directories' files and, of
//     each Go file, the part `go list` reads (up to the end of the imports:
//     build constraints, package clause, imports), so a save that edits
//     code below the imports keeps it;
//   - export data: the imported paths, and the source files of every
//     imported package outside the module cache (the module's own
//     packages, local replacements, vendored copies), checked on use, as
//     is that every export file it names still exists (a `go clean -cache`
//     removes them).
//
// Lists with errors are never kept. Directories inside the module are kept
// relative to it: snapshots live in fresh temporary directories.

// envVars are the `go env` variables a run reads, in this order. The ones
// after GOTOOLDIR decide what `go list` prints (GOFLAGS may set tags).
var envVars = []string{"GOVERSION", "GOTOOLDIR", "GOMODCACHE", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOEXPERIMENT", "GOWORK"}

// listEntry is one kept list.
type listEntry struct {
	Listed []listed `json:"listed"`
	// Sources hash the Go files of each dependency directory outside the
	// module cache (export lists), Headers their names and headers (lists
	// of the changed packages, whose Deps follow those imports), by the
	// directory as stored.
	Sources map[string]string `json:"sources,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// modPrefix marks a directory stored relative to the module root.
const modPrefix = "$mod/"

// listKeyBase starts the key of a list of mod: what both lists depend on.
func (s *session) listKeyBase(kind, mod string) hash.Hash {
	h := sha256.New()
	fmt.Fprintf(h, "bcode-golist-v1\x00%s\x00%s\x00%s\x00", kind, s.runner.Name(), strings.Join(s.env, "\x00"))
	for _, f := range []string{"go.mod", "go.sum", filepath.Join("vendor", "modules.txt")} {
		hashFile(h, s.root, mod, filepath.Join(mod, f))
	}
	if w := s.goEnv("GOWORK"); w != "" && w != "off" {
		hashFile(h, filepath.Dir(w), mod, w)
	}
	return h
}

// targetsKey is the key of the list of mod's target directories
// (relative, slash-separated, as given to go list).
func (s *session) targetsKey(mod string, targets []string) string {
	h := s.listKeyBase("targets", mod)
	for _, t := range targets {
		fmt.Fprintf(h, "target\x00%s\x00", t)
		fmt.Fprintf(h, "%s\x00", dirHeaders(s.root, filepath.Join(mod, filepath.FromSlash(t))))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// goHeader hashes what `go list` reads of a Go file: everything up to the
// end of its last import (build constraints, package clause, imports). A
// file that does not parse that far is hashed whole.
func goHeader(root, path string) string {
	src, err := mutate.ReadBeneath(root, path, maxSourceFile)
	if err != nil {
		return "missing"
	}
	end := len(src)
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly|parser.ParseComments); err == nil {
		end = fset.Position(f.Name.End()).Offset
		for _, d := range f.Decls {
			if o := fset.Position(d.End()).Offset; o > end {
				end = o
			}
		}
	}
	sum := sha256.Sum256(src[:end])
	return hex.EncodeToString(sum[:])
}

// depsKey is the key of the export list of imports (sorted).
func (s *session) depsKey(mod string, imports []string) string {
	h := s.listKeyBase("deps", mod)
	fmt.Fprintf(h, "%s\x00", strings.Join(imports, "\x00"))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// hashFile writes path (relative to mod when inside it) and the hash of
// its content, or that it is missing (or refused), into h. path is read
// confined to root.
func hashFile(h hash.Hash, root, mod, path string) {
	name := path
	if r, err := filepath.Rel(mod, path); err == nil && filepath.IsLocal(r) {
		name = filepath.ToSlash(r)
	}
	data, err := mutate.ReadBeneath(root, path, maxSourceFile)
	if err != nil {
		fmt.Fprintf(h, "%s\x00missing\x00", name)
		return
	}
	fmt.Fprintf(h, "%s\x00%x\x00", name, sha256.Sum256(data))
}

// goSources hashes the non-test Go files of dir (names and contents).
func goSources(root, dir string) string {
	h := sha256.New()
	entries, _ := readDirBeneath(root, dir)
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			hashFile(h, root, dir, filepath.Join(dir, n))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// dirHeaders hashes the file names of dir and the headers of its Go files.
func dirHeaders(root, dir string) string {
	h := sha256.New()
	entries, _ := readDirBeneath(root, dir)
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), e.Type())
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") {
			fmt.Fprintf(h, "%s\x00", goHeader(root, filepath.Join(dir, e.Name())))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// inModCache reports whether dir is inside the module cache, whose
// contents go.sum pins.
func (s *session) inModCache(dir string) bool {
	mc := s.goEnv("GOMODCACHE")
	if mc == "" || dir == "" {
		return false
	}
	r, err := filepath.Rel(mc, dir)
	return err == nil && filepath.IsLocal(r)
}

func (s *session) listCacheFile(key string) string {
	return filepath.Join(s.opts.CacheDir, "golist", key+".json")
}

// cachedList returns the kept list for key, with directories made
// absolute under mod, when every source it depends on is unchanged and
// every export file is still there.
func (s *session) cachedList(mod, key string) ([]listed, bool) {
	if s.opts.NoCache {
		return nil, false
	}
	data, err := sandbox.ReadPath(s.listCacheFile(key), maxCacheEntry)
	if err != nil {
		return nil, false
	}
	var e listEntry
	if json.Unmarshal(data, &e) != nil {
		return nil, false
	}
	for dir, sum := range e.Sources {
		if s.goSources(fromStored(mod, dir)) != sum {
			return nil, false
		}
	}
	for dir, sum := range e.Headers {
		if s.dirHeaders(fromStored(mod, dir)) != sum {
			return nil, false
		}
	}
	for i := range e.Listed {
		if x := e.Listed[i].Export; x != "" {
			if _, err := os.Stat(x); err != nil {
				return nil, false
			}
		}
		mapDirs(mod, &e.Listed[i], fromStored)
	}
	return e.Listed, true
}

// storeList keeps list for key, with what checks it on use: the sources
// (export lists) or the headers (lists of the changed packages) of deps'
// directories outside the module cache. A cache that cannot be written
// only costs time next run.
func (s *session) storeList(mod, key string, list, deps []listed, headers bool) {
	for _, l := range list {
		if l.Error != nil {
			return
		}
	}
	e := listEntry{Sources: map[string]string{}, Headers: map[string]string{}}
	for _, l := range deps {
		if l.Standard || l.Dir == "" || s.inModCache(l.Dir) {
			continue
		}
		if headers {
			e.Headers[toStored(mod, l.Dir)] = s.dirHeaders(l.Dir)
		} else {
			e.Sources[toStored(mod, l.Dir)] = s.goSources(l.Dir)
		}
	}
	for _, l := range list {
		mapDirs(mod, &l, toStored)
		e.Listed = append(e.Listed, l)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	file := s.listCacheFile(key)
	if os.MkdirAll(filepath.Dir(file), 0o755) != nil {
		return
	}
	tmp := file + ".tmp" + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, data, 0o644) == nil {
		if os.Rename(tmp, file) != nil {
			_ = os.Remove(tmp)
		}
	}
	s.pruneListCache(filepath.Dir(file))
}

// maxListEntries bounds the kept lists: every import change makes a new
// entry.
const maxListEntries = 256

func (s *session) pruneListCache(dir string) {
	entries, err := sandbox.ReadDir(dir)
	if err != nil || len(entries) <= maxListEntries {
		return
	}
	type aged struct {
		name string
		mod  int64
	}
	var all []aged
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod < all[j].mod })
	for _, a := range all[:len(all)-maxListEntries] {
		_ = os.Remove(filepath.Join(dir, a.name))
	}
}

func toStored(mod, dir string) string {
	if r, err := filepath.Rel(mod, dir); err == nil && (r == "." || filepath.IsLocal(r)) {
		return modPrefix + filepath.ToSlash(r)
	}
	return dir
}

func fromStored(mod, dir string) string {
	if r, ok := strings.CutPrefix(dir, modPrefix); ok {
		return filepath.Join(mod, filepath.FromSlash(r))
	}
	return dir
}

// mapDirs rewrites l's package and module directories with f (toStored
// or fromStored), copying the module so a shared one is not changed.
func mapDirs(mod string, l *listed, f func(mod, dir string) string) {
	l.Dir = f(mod, l.Dir)
	if l.Module != nil {
		m := *l.Module
		m.Dir = f(mod, m.Dir)
		l.Module = &m
	}
}

// goEnv is the value of one of envVars.
func (s *session) goEnv(name string) string {
	for i, v := range envVars {
		if v == name && i < len(s.env) {
			return s.env[i]
		}
	}
	return ""
}

// goSources and dirHeaders of a dependency's directory: read beneath the
// snapshot when it is there (the agent's tree), else beneath the directory
// itself (a replaced module elsewhere on the host).
func (s *session) goSources(dir string) string { return goSources(s.rootOf(dir), dir) }

func (s *session) dirHeaders(dir string) string { return dirHeaders(s.rootOf(dir), dir) }

func (s *session) rootOf(dir string) string {
	if r, err := filepath.Rel(s.root, dir); err == nil && filepath.IsLocal(r) {
		return s.root
	}
	return dir
}
