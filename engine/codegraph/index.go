package codegraph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// Stats says what one Index call did.
type Stats struct {
	Module    string        `json:"module"`
	Units     int           `json:"units"`     // directories in the index
	Reused    int           `json:"reused"`    // taken from the store unchanged
	Reindexed []string      `json:"reindexed"` // directories indexed this time, sorted
	Removed   []string      `json:"removed"`   // directories gone since the last run
	Refused   []string      `json:"refused"`   // .go files not read: symbolic links
	Scan      time.Duration `json:"scan_ns"`   // walking and hashing the tree
	Load      time.Duration `json:"load_ns"`   // go/packages and the index walk
	Total     time.Duration `json:"total_ns"`
	Errors    []string      `json:"errors,omitempty"`
	// Pending are the directories the load did not reach before its
	// deadline: absent from the graph, or (when an older unit of theirs
	// was stored) there as that older unit. Why says which deadline
	// passed, how it was derived and the load; both empty when complete.
	Pending []string `json:"pending,omitempty"`
	Why     string   `json:"why,omitempty"`
	// ListDeadline and CheckDeadline are the deadlines the load had: go
	// list's, and checking and indexing the packages'.
	ListDeadline  time.Duration `json:"list_deadline_ns,omitempty"`
	CheckDeadline time.Duration `json:"check_deadline_ns,omitempty"`
}

// Options tune one Index call. The zero value indexes in sorted order
// with deadlines derived from the store's measurements and the load.
type Options struct {
	// First is the repository-relative file (or directory) the index is
	// for, a pack's selection: its package is indexed first, then the
	// others by import distance from it, so a load cut short by its
	// deadline has indexed what matters most to it.
	First string
	// Progress, when set, is called after each directory is indexed.
	Progress func(done, total int, dir string)
	// CheckDeadline, when positive, replaces the derived deadline of
	// checking and indexing (tests; a caller with a budget of its own).
	CheckDeadline time.Duration
	// ListDeadline, when positive, replaces go list's derived deadline
	// (tests).
	ListDeadline time.Duration
}

// loadOptions are what indexGo needs of Options, deadlines resolved.
type loadOptions struct {
	first                       string
	progress                    func(done, total int, dir string)
	listDeadline, checkDeadline time.Duration
	load                        sandbox.Load // the load the deadlines were derived under
}

// loadFloor is a load's deadline when nothing of it was measured, before
// the load factor: the go command's own default.
var loadFloor = gotool.DefaultLimits.Timeout

// loadDeadlines derives a load's deadlines: go list's is the floor
// stretched by the machine's load; checking's is what the same
// directories took when last indexed (their stored units' Took, times
// Load.Deadline's margin), or the stretched floor when any of them was never
// measured. It returns the measured sum with them, for Stats.Why.
func loadDeadlines(l sandbox.Load, dirs []string, stored map[string]*Unit) (list, check, measured time.Duration) {
	unmeasured := false
	for _, d := range dirs {
		if u := stored[d]; u != nil && u.Took > 0 {
			measured += u.Took
		} else {
			unmeasured = true
		}
	}
	floor := time.Duration(0)
	if unmeasured {
		floor = loadFloor
	}
	return l.Deadline(loadFloor, 0), l.Deadline(floor, measured), measured
}

// ErrNoGoModule is returned by Index for a directory without a go.mod.
var ErrNoGoModule = errors.New("no go.mod at the repository root")

// Index brings the Go index of repo up to date and returns the assembled
// graph. Directories whose content hash matches the store are reused;
// changed ones, and the directories that import a changed one, are
// re-indexed and saved back. store may be nil (index in memory only).
func Index(ctx context.Context, repo string, store Store) (*Graph, Stats, error) {
	return IndexWith(ctx, repo, store, Options{})
}

// IndexWith is Index with options: the order of a load, its progress,
// its deadline. A load whose deadline passes returns the graph of what it
// indexed, with the rest in Stats.Pending and the reason in Stats.Why.
func IndexWith(ctx context.Context, repo string, store Store, o Options) (*Graph, Stats, error) {
	start := time.Now()
	var st Stats
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, st, err
	}
	conf, err := sandbox.OpenConfined(abs)
	if err != nil {
		return nil, st, err
	}
	defer conf.Close()
	gomod, module, err := readModule(conf, abs)
	if err != nil {
		return nil, st, err
	}
	st.Module = module
	keeper, _ := store.(graphKeeper)
	var sums *fileSums
	if keeper != nil {
		sums = keeper.sums(abs)
	}
	scan, err := scanTree(conf, gomod, sums)
	if err != nil {
		return nil, st, err
	}
	st.Refused = scan.Refused
	st.Scan = time.Since(start)
	key := graphKey(module, scan)
	if keeper != nil {
		if k, ok := keeper.kept(abs, key); ok {
			st.Units, st.Reused, st.Errors, st.Total = k.units, k.units, k.errors, time.Since(start)
			return k.g, st, nil
		}
	}

	stored := map[string]*Unit{}
	if store != nil {
		if stored, err = store.Load(ctx, abs); err != nil {
			return nil, st, fmt.Errorf("reading the stored index: %w", err)
		}
	}
	st.Reindexed, st.Removed = toReindex(module, scan.Hashes, stored)

	loadStart := time.Now()
	load := sandbox.ReadLoad()
	lo := loadOptions{first: firstDir(o.First, scan.Hashes), progress: o.Progress, load: load}
	var measured time.Duration
	lo.listDeadline, lo.checkDeadline, measured = loadDeadlines(load, st.Reindexed, stored)
	if o.CheckDeadline > 0 {
		lo.checkDeadline = o.CheckDeadline
	}
	if o.ListDeadline > 0 {
		lo.listDeadline = o.ListDeadline
	}
	st.ListDeadline, st.CheckDeadline = lo.listDeadline, lo.checkDeadline
	fresh, pending, err := reindex(ctx, conf, module, st.Reindexed, scan.Hashes, lo)
	if err != nil {
		return nil, st, err
	}
	st.Load = time.Since(loadStart)
	if len(pending) > 0 {
		st.Pending = pending
		st.Why = fmt.Sprintf("indexing stopped at its deadline of %s (%s; %s measured for these packages before), %d of %d packages indexed",
			lo.checkDeadline.Round(time.Second), load, measured.Round(time.Millisecond), len(st.Reindexed)-len(pending), len(st.Reindexed))
		st.Reindexed = slices.DeleteFunc(st.Reindexed, func(d string) bool { return slices.Contains(pending, d) })
	}
	if store != nil && (len(st.Reindexed) > 0 || len(st.Removed) > 0) {
		if err := saveUnits(ctx, store, abs, st.Reindexed, fresh, st.Removed); err != nil {
			return nil, st, err
		}
	}
	units := st.gatherUnits(scan.Hashes, fresh, stored)
	st.Units = len(units)
	g := Assemble(module, units)
	if keeper != nil && len(st.Pending) == 0 {
		keeper.keep(abs, keptGraph{key: key, g: g, units: st.Units, errors: st.Errors})
	}
	st.Total = time.Since(start)
	return g, st, nil
}

// readModule reads the tree's go.mod and the module path it names.
func readModule(conf *sandbox.Confined, abs string) (gomod []byte, module string, err error) {
	gomod, err = conf.ReadFile("go.mod", 1<<20)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("%s: %w", abs, ErrNoGoModule)
		}
		return nil, "", fmt.Errorf("reading go.mod: %w", err)
	}
	module = modulePath(gomod)
	if module == "" {
		return nil, "", fmt.Errorf("%s/go.mod names no module", abs)
	}
	return gomod, module, nil
}

// toReindex decides which directories are indexed again: those whose hash
// is not the stored one, and the live ones that import a package of a
// changed or removed directory. It also returns the stored directories
// gone from the tree. Both are sorted.
func toReindex(module string, hashes map[string]string, stored map[string]*Unit) (dirs, removed []string) {
	changed := map[string]bool{}
	for dir, h := range hashes {
		if u, ok := stored[dir]; !ok || u.Hash != h {
			changed[dir] = true
		}
	}
	for dir := range stored {
		if _, ok := hashes[dir]; !ok {
			removed = append(removed, dir)
		}
	}
	slices.Sort(removed)
	// A changed package can change what its importers' names resolve to;
	// re-index its direct importers too.
	changedPkgs := changedPackages(module, changed, removed, stored)
	for dir, u := range stored {
		if _, live := hashes[dir]; !live || changed[dir] {
			continue
		}
		for _, imp := range u.Imports {
			if changedPkgs[imp] {
				changed[dir] = true
				break
			}
		}
	}
	dirs = make([]string, 0, len(changed))
	for d := range changed {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs, removed
}

// changedPackages are the import paths of the changed directories'
// packages (with their external test packages) and of the packages the
// removed directories had.
func changedPackages(module string, changed map[string]bool, removed []string, stored map[string]*Unit) map[string]bool {
	pkgs := map[string]bool{}
	for dir := range changed {
		pkgs[packagePath(module, dir)] = true
		pkgs[packagePath(module, dir)+"_test"] = true
	}
	for _, dir := range removed {
		for _, p := range stored[dir].Pkgs {
			pkgs[p] = true
		}
	}
	return pkgs
}

// reindex indexes dirs afresh, each unit carrying its directory's hash,
// and returns the directories its deadline left pending.
func reindex(ctx context.Context, conf *sandbox.Confined, module string, dirs []string, hashes map[string]string, lo loadOptions) (map[string]*Unit, []string, error) {
	if len(dirs) == 0 {
		return map[string]*Unit{}, nil, nil
	}
	ld, err := indexGo(ctx, conf, module, dirs, lo)
	if err != nil {
		return nil, nil, err
	}
	for d, u := range ld.units {
		u.Hash = hashes[d]
	}
	return ld.units, ld.pending, nil
}

// firstDir is the scanned directory of file (or the directory itself),
// "" when it is none of the tree's Go directories.
func firstDir(file string, hashes map[string]string) string {
	if file == "" {
		return ""
	}
	for _, d := range []string{path.Clean(file), path.Dir(path.Clean(file))} {
		if _, ok := hashes[d]; ok {
			return d
		}
	}
	return ""
}

// saveUnits stores the units of the re-indexed directories and forgets the
// removed ones.
func saveUnits(ctx context.Context, store Store, abs string, dirs []string, fresh map[string]*Unit, removed []string) error {
	save := make([]*Unit, 0, len(dirs))
	for _, d := range dirs {
		save = append(save, fresh[d])
	}
	if err := store.Save(ctx, abs, save, removed); err != nil {
		return fmt.Errorf("saving the index: %w", err)
	}
	return nil
}

// gatherUnits lists the unit of every live directory: the fresh one, else
// the stored one (counted in st.Reused); the first 20 of their errors go
// to st.Errors.
func (st *Stats) gatherUnits(hashes map[string]string, fresh, stored map[string]*Unit) []*Unit {
	units := make([]*Unit, 0, len(hashes))
	for dir := range hashes {
		u := fresh[dir]
		if u == nil {
			if u = stored[dir]; u == nil {
				continue // pending, never indexed
			}
			if !slices.Contains(st.Pending, dir) {
				st.Reused++
			}
		}
		units = append(units, u)
		for _, e := range u.Errors {
			if len(st.Errors) < 20 {
				st.Errors = append(st.Errors, u.Dir+": "+e)
			}
		}
	}
	return units
}

// Scan is the content state of a repository's Go directories.
type Scan struct {
	// Hashes maps each repository-relative directory holding .go files to
	// a hash of go.mod, the toolchain's identity and every .go file's name
	// and content in it.
	Hashes  map[string]string
	Refused []string // .go files that are symbolic links (never read) or over the size cap
}

// indexFormat goes into every directory's hash, so units a build of bcode
// with another format stored (v1 kept the tools' error messages; v2 typed
// outside packages from export data, so its method keys name them where
// v3's have the invalid type) are re-indexed rather than reused.
const indexFormat = "codegraph v3\n"

// toolchainIdentity names the go command the index loads with; it goes
// into every directory's hash, because the standard library's types (and
// what the go command lists) are the toolchain's: a unit or a graph
// indexed with another Go is indexed again, not reused. A variable so a
// test can be another toolchain.
var toolchainIdentity = gotool.Identity

// skipDir reports whether the go tool ignores a directory (and so the index
// does too): hidden, underscore, testdata and vendor directories.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor"
}

// graphKey names the graph of one scanned tree: its module, every
// directory's hash and the files refused.
func graphKey(module string, scan *Scan) string {
	dirs := make([]string, 0, len(scan.Hashes))
	for d := range scan.Hashes {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", module)
	for _, d := range dirs {
		fmt.Fprintf(h, "%s\x00%s\n", d, scan.Hashes[d])
	}
	for _, r := range scan.Refused {
		fmt.Fprintf(h, "refused %s\n", r)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ScanTree hashes each Go directory of conf's tree. Names come from
// walking the directory (which never follows links); contents only through
// conf, which refuses symbolic links. Nested modules are skipped: they are
// other modules.
func ScanTree(conf *sandbox.Confined, gomod []byte) (*Scan, error) {
	return scanTree(conf, gomod, nil)
}

// scanTree is ScanTree taking a file's hash from sums when its size and
// modification time are those it was hashed with (sums nil: hash all).
func scanTree(conf *sandbox.Confined, gomod []byte, sums *fileSums) (*Scan, error) {
	now := time.Now()
	modSum := sha256.Sum256(gomod)
	tool := toolchainIdentity()
	type entry struct{ name, sum string }
	perDir := map[string][]entry{}
	out := &Scan{Hashes: map[string]string{}}
	err := walkModule(conf, ".", func(rel string, d fs.DirEntry) {
		if !strings.HasSuffix(d.Name(), ".go") {
			return
		}
		dir := path.Dir(rel)
		if d.Type()&fs.ModeSymlink != 0 {
			out.Refused = append(out.Refused, rel)
			perDir[dir] = append(perDir[dir], entry{d.Name(), "symlink"})
			return
		}
		if !d.Type().IsRegular() {
			return
		}
		info, _ := d.Info()
		if sum, ok := sums.lookup(rel, info); ok {
			perDir[dir] = append(perDir[dir], entry{d.Name(), sum})
			return
		}
		// Capped: a 2 GB .go file the agent wrote must not become 2 GB of
		// bcode. One over the cap is hashed by its size alone; the shadow
		// copy leaves it out too.
		data, err := conf.ReadFile(rel, shadowGoFileMax+1)
		if err != nil {
			out.Refused = append(out.Refused, rel)
			return
		}
		if len(data) > shadowGoFileMax {
			out.Refused = append(out.Refused, rel)
			perDir[dir] = append(perDir[dir], entry{d.Name(), "too large"})
			return
		}
		sum := sha256.Sum256(data)
		perDir[dir] = append(perDir[dir], entry{d.Name(), hex.EncodeToString(sum[:])})
		sums.record(rel, info, len(data), hex.EncodeToString(sum[:]), now)
	})
	if err != nil {
		return nil, err
	}
	for dir, es := range perDir {
		slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		h := sha256.New()
		h.Write([]byte(indexFormat))
		h.Write(modSum[:])
		fmt.Fprintf(h, "%s\n", tool)
		for _, e := range es {
			fmt.Fprintf(h, "%s\x00%s\n", e.name, e.sum)
		}
		out.Hashes[dir] = hex.EncodeToString(h.Sum(nil))
	}
	slices.Sort(out.Refused)
	return out, nil
}

// walkModule calls visit with every entry that is not a directory below
// dir ("." the root; names "/"-separated, relative to the root), in the
// order of the listings, without following links. It does not enter a
// directory skipDir names, nor one holding a go.mod (another module):
// that is seen in the directory's own listing, which the walk reads
// anyway, rather than by an lstat of its go.mod, which through the
// confined root costs an open per path component. An unreadable
// directory below the root is skipped; the root's is the error.
func walkModule(conf *sandbox.Confined, dir string, visit func(rel string, d fs.DirEntry)) error {
	ents, err := conf.ReadDir(dir)
	if err != nil {
		return err
	}
	if dir != "." && slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == "go.mod" }) {
		return nil
	}
	for _, e := range ents {
		rel := path.Join(dir, e.Name())
		switch {
		case !e.IsDir():
			visit(rel, e)
		case !skipDir(e.Name()):
			walkModule(conf, rel, visit) // unreadable: skipped
		}
	}
	return nil
}

// modulePath reads the module path from go.mod's module directive.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), "\"`")
		}
	}
	return ""
}
