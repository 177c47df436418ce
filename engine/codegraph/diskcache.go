package codegraph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/bcode-dev/bcode/sandbox"
)

// DiskCache is a Store (its units are kept by Units, e.g. the ledger's
// code index) that also keeps, in one file per repository under Dir, what
// a MemoryStore keeps in memory: the files' hashes by size, modification
// time, inode and change time, and the last graph assembled, by the key
// of the tree it was assembled from (graphKey: the module, every
// directory's content hash, which holds the toolchain's identity, and
// the files refused). So a process that starts afresh (the CLI) pays for
// an unchanged tree a walk with a stat per file and one read of the file,
// not reading every file, decoding every unit and assembling the graph.
// A file edited, checked out by a new commit or indexed with another Go
// gives another key, and the graph is assembled again from the units.
type DiskCache struct {
	Units Store
	Dir   string

	mu    sync.Mutex
	repos map[string]*diskRepo
}

// diskRepo is what the cache read of one repository's file.
type diskRepo struct {
	sums    *fileSums
	section string // the file's graph section, undecoded
	graph   *keptGraph
	ahead   *decodeAhead // section's decoding, begun when the file was read
}

// decodeAhead is a graph section's decoding, run beside the tree's walk:
// the walk decides whether the graph is still the tree's (its key), and
// when it is, the graph is ready or nearly. When it is not, the decoding
// was wasted on a run that re-indexes anyway. done is closed when k and
// err are set.
type decodeAhead struct {
	done chan struct{}
	k    keptGraph
	err  error
}

func decodeBeside(section string) *decodeAhead {
	d := &decodeAhead{done: make(chan struct{})}
	go func() {
		d.k, d.err = decodeGraph(section)
		close(d.done)
	}()
	return d
}

// graphFileMax bounds the read of a graph file (x/tools' is about 2 MB).
const graphFileMax = 256 << 20

// Load implements Store.
func (c *DiskCache) Load(ctx context.Context, repo string) (map[string]*Unit, error) {
	return c.Units.Load(ctx, repo)
}

// Save implements Store.
func (c *DiskCache) Save(ctx context.Context, repo string, units []*Unit, removed []string) error {
	return c.Units.Save(ctx, repo, units, removed)
}

func (c *DiskCache) file(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:16])+".graph")
}

// repo reads repo's file once; a missing, unreadable or foreign file is
// an empty cache.
func (c *DiskCache) repo(repo string) *diskRepo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.repos[repo]; r != nil {
		return r
	}
	if c.repos == nil {
		c.repos = map[string]*diskRepo{}
	}
	r := &diskRepo{sums: &fileSums{}}
	c.repos[repo] = r
	data, err := sandbox.ReadPath(c.file(repo), graphFileMax)
	if err != nil {
		return r
	}
	owner, sums, section, err := decodeSums(string(data))
	if err != nil || owner != repo {
		return r
	}
	r.sums.m, r.section = sums, section
	if graphSectionKey(section) != "" {
		r.ahead = decodeBeside(section)
	}
	return r
}

func (c *DiskCache) sums(repo string) *fileSums {
	s := c.repo(repo).sums
	s.beginScan()
	return s
}

func (c *DiskCache) kept(repo, key string) (keptGraph, bool) {
	r := c.repo(repo)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.graph == nil || r.graph.key != key {
		if graphSectionKey(r.section) != key {
			return keptGraph{}, false
		}
		var k keptGraph
		var err error
		if d := r.ahead; d != nil {
			<-d.done
			k, err = d.k, d.err
		} else {
			k, err = decodeGraph(r.section)
		}
		if err != nil {
			return keptGraph{}, false
		}
		r.graph = &k
	}
	if r.sums.changed {
		// The same tree, some files hashed again (touched, not changed):
		// keep their new times so the next run need not read them.
		c.write(repo, r, r.section)
	}
	return *r.graph, true
}

func (c *DiskCache) keep(repo string, k keptGraph) {
	r := c.repo(repo)
	c.mu.Lock()
	defer c.mu.Unlock()
	r.graph, r.section, r.ahead = &k, string(encodeGraph(k)), nil
	c.write(repo, r, r.section)
}

// write replaces repo's file with the hashes of the files the last scan
// saw and section, best effort: a cache that cannot be written is only
// slower. Callers hold c.mu.
func (c *DiskCache) write(repo string, r *diskRepo, section string) {
	r.sums.mu.Lock()
	seen := r.sums.seen
	r.sums.changed = false
	r.sums.mu.Unlock()
	data := encodeSums(repo, r.sums, func(name string) bool { return seen == nil || seen[name] })
	data = append(data, section...)
	if os.MkdirAll(c.Dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(c.Dir, path.Base(c.file(repo))+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), c.file(repo)) != nil {
		os.Remove(tmp.Name())
	}
}
