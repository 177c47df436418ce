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
// file's size and modification time are those recorded.
type fileSums struct {
	mu sync.Mutex
	m  map[string]fileSum
}

type fileSum struct {
	size  int64
	mtime time.Time
	sum   string
}

// lookup returns name's recorded hash when info matches the record.
func (f *fileSums) lookup(name string, info fs.FileInfo) (string, bool) {
	if f == nil || info == nil {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.m[name]
	if !ok || r.size != info.Size() || !r.mtime.Equal(info.ModTime()) {
		return "", false
	}
	return r.sum, true
}

// record remembers name's hash, unless the file was modified within
// racyWindow of now or changed while it was read (size differs).
func (f *fileSums) record(name string, info fs.FileInfo, read int, sum string, now time.Time) {
	if f == nil || info == nil || int64(read) != info.Size() || now.Sub(info.ModTime()) < racyWindow {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]fileSum{}
	}
	f.m[name] = fileSum{size: info.Size(), mtime: info.ModTime(), sum: sum}
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
