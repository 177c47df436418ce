package codegraph

import (
	"io/fs"
	"sync"
	"time"
)

// What a long-lived index (a bcode-ls connection's MemoryStore) keeps so
// that a pack on an unchanged tree costs a walk of the tree and no more:
// each file's hash by its size and modification time, and the last graph
// assembled, by the key of the tree it was assembled from (graphKey).
// Nothing here changes an answer: a file whose size or time differs is
// hashed again, and a graph is reused only for the same directory hashes.

// graphKeeper is a Store that keeps the last assembled graph and the
// files' hashes between Index calls.
type graphKeeper interface {
	sums(repo string) *fileSums
	kept(repo, key string) (keptGraph, bool)
	keep(repo string, k keptGraph)
}

// racyWindow: a file modified this close to the scan that hashed it may
// change again within its timestamp's granularity without its size or
// time changing, so its hash is not remembered (git's "racy" entries).
const racyWindow = 2 * time.Second

// fileSums are file hashes by repository-relative name, valid while the
// file's size, modification time, inode and change time are those
// recorded.
type fileSums struct {
	mu sync.Mutex
	m  map[string]fileSum
	// seen are the names looked up or recorded since beginScan, and
	// changed says a hash was recorded: what a cache on disk writes back.
	seen    map[string]bool
	changed bool
}

type fileSum struct {
	size  int64
	mtime time.Time
	ino   uint64
	ctime int64
	sum   string
}

// beginScan starts a scan: what it looks up or records is what is seen.
func (f *fileSums) beginScan() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen, f.changed = map[string]bool{}, false
}

// lookup returns name's recorded hash when info matches the record.
func (f *fileSums) lookup(name string, info fs.FileInfo) (string, bool) {
	if f == nil || info == nil {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.m[name]
	ino, ctime := fileStamp(info)
	if !ok || r.size != info.Size() || !r.mtime.Equal(info.ModTime()) || r.ino != ino || r.ctime != ctime {
		return "", false
	}
	if f.seen != nil {
		f.seen[name] = true
	}
	return r.sum, true
}

// record remembers name's hash, unless the file was modified within
// racyWindow of now or changed while it was read (size differs).
func (f *fileSums) record(name string, info fs.FileInfo, read int, sum string, now time.Time) {
	if f == nil || info == nil || int64(read) != info.Size() || now.Sub(info.ModTime()) < racyWindow {
		return
	}
	ino, ctime := fileStamp(info)
	if now.Sub(time.Unix(0, ctime)) < racyWindow {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]fileSum{}
	}
	f.m[name] = fileSum{size: info.Size(), mtime: info.ModTime(), ino: ino, ctime: ctime, sum: sum}
	if f.seen != nil {
		f.seen[name] = true
	}
	f.changed = true
}

// keptGraph is a graph, the tree it was assembled from (key) and what
// the Stats of an Index returning it say of its units: how many, and
// their errors (so a warm pack notes them as the first did).
type keptGraph struct {
	key    string
	g      *Graph
	units  int
	errors []string
}
