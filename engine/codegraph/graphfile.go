package codegraph

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"
)

// The graph file: an assembled graph and the files' hashes it was
// assembled from, in one binary form a process reads without decoding a
// unit or assembling anything (a warm `bcode pack` reads x/tools' graph
// this way instead of decoding 215 units' JSON and assembling them). Every
// string is written once, in a table, and named by its index.

// graphFileMagic starts every graph file; a file of another version is
// not read (and is overwritten by the next graph kept).
const graphFileMagic = "bcode codegraph graph file v1\n"

var errGraphFile = errors.New("codegraph: not a graph file of this version")

// graphWriter appends the file's fields to buf.
type graphWriter struct {
	buf     []byte
	strings map[string]uint64
	table   []string
}

func (w *graphWriter) uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *graphWriter) int(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }
func (w *graphWriter) str(s string)  { w.uint(uint64(len(s))); w.buf = append(w.buf, s...) }

// ref names s by its index in the string table, adding it when new.
func (w *graphWriter) ref(s string) {
	i, ok := w.strings[s]
	if !ok {
		i = uint64(len(w.table))
		w.strings[s] = i
		w.table = append(w.table, s)
	}
	w.uint(i)
}

// encodeSums writes the hashes of the files named by keep.
func encodeSums(repo string, f *fileSums, keep func(string) bool) []byte {
	w := &graphWriter{buf: []byte(graphFileMagic)}
	w.str(repo)
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.m))
	for n := range f.m {
		if keep(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	w.uint(uint64(len(names)))
	for _, n := range names {
		r := f.m[n]
		w.str(n)
		w.int(r.size)
		w.int(r.mtime.UnixNano())
		w.uint(r.ino)
		w.int(r.ctime)
		w.str(r.sum)
	}
	return w.buf
}

// encodeGraph writes k: its key, what its Stats say, then the graph.
func encodeGraph(k keptGraph) []byte {
	body := &graphWriter{strings: map[string]uint64{}}
	g := k.g
	body.uint(uint64(len(g.Symbols)))
	for _, f := range g.Files() {
		for _, s := range g.byFile[f] {
			body.ref(s.ID)
			body.ref(s.Name)
			body.ref(string(s.Kind))
			body.ref(s.Pkg)
			body.ref(s.File)
			body.uint(uint64(s.Line))
			body.uint(uint64(s.EndLine))
			body.ref(s.Signature)
			if s.Test {
				body.uint(1)
			} else {
				body.uint(0)
			}
		}
	}
	from := make([]string, 0, len(g.out))
	for id := range g.out {
		from = append(from, id)
	}
	slices.Sort(from)
	n := 0
	for _, id := range from {
		n += len(g.out[id])
	}
	body.uint(uint64(n))
	for _, id := range from {
		for _, e := range g.out[id] {
			body.ref(string(e.Kind))
			body.ref(e.From)
			body.ref(e.To)
		}
	}
	pkgs := make([]string, 0, len(g.pkgDirs))
	for p := range g.pkgDirs {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	body.uint(uint64(len(pkgs)))
	for _, p := range pkgs {
		body.ref(p)
		body.ref(g.pkgDirs[p])
	}
	head := &graphWriter{}
	head.str(k.key)
	head.uint(uint64(k.units))
	head.uint(uint64(len(k.errors)))
	for _, e := range k.errors {
		head.str(e)
	}
	head.str(g.Module)
	head.uint(uint64(len(body.table)))
	for _, s := range body.table {
		head.str(s)
	}
	return append(head.buf, body.buf...)
}

// graphReader reads what graphWriter wrote, from one string so that every
// string read is a slice of it, not a copy.
type graphReader struct {
	data  string
	off   int
	err   error
	table []string
}

func (r *graphReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; r.off < len(r.data) && i < binary.MaxVarintLen64; i++ {
		b := r.data[r.off]
		r.off++
		if b < 0x80 {
			return v | uint64(b)<<shift
		}
		v |= uint64(b&0x7f) << shift
		shift += 7
	}
	r.err = errGraphFile
	return 0
}

func (r *graphReader) int() int64 {
	u := r.uint()
	return int64(u>>1) ^ -int64(u&1)
}

// count reads a length that must fit in what is left of the data.
func (r *graphReader) count() int {
	n := r.uint()
	if n > uint64(len(r.data)-r.off) {
		r.err = errGraphFile
		return 0
	}
	return int(n)
}

func (r *graphReader) str() string {
	n := r.count()
	if r.err != nil {
		return ""
	}
	s := r.data[r.off : r.off+n]
	r.off += n
	return s
}

func (r *graphReader) ref() string {
	i := r.uint()
	if r.err != nil || i >= uint64(len(r.table)) {
		r.err = errGraphFile
		return ""
	}
	return r.table[i]
}

// decodeSums reads the head of a graph file: the repository it is of and
// its files' hashes. The rest of the data is the graph section.
func decodeSums(data string) (repo string, sums map[string]fileSum, rest string, err error) {
	if len(data) < len(graphFileMagic) || data[:len(graphFileMagic)] != graphFileMagic {
		return "", nil, "", errGraphFile
	}
	r := &graphReader{data: data, off: len(graphFileMagic)}
	repo = r.str()
	n := r.count()
	sums = make(map[string]fileSum, n)
	for range n {
		name := r.str()
		var s fileSum
		s.size = r.int()
		s.mtime = time.Unix(0, r.int())
		s.ino = r.uint()
		s.ctime = r.int()
		s.sum = r.str()
		if r.err != nil {
			return "", nil, "", r.err
		}
		sums[name] = s
	}
	return repo, sums, data[r.off:], r.err
}

// graphSectionKey is the key of the graph a graph section holds.
func graphSectionKey(section string) string {
	r := &graphReader{data: section}
	key := r.str()
	if r.err != nil {
		return ""
	}
	return key
}

// decodeGraph reads a graph section back into the graph encodeGraph
// wrote: the same symbols, edges in the same order, files' symbols by
// line, IDs sorted.
func decodeGraph(section string) (keptGraph, error) {
	r := &graphReader{data: section}
	var k keptGraph
	k.key = r.str()
	k.units = int(r.uint())
	for range r.count() {
		k.errors = append(k.errors, r.str())
	}
	g := &Graph{Module: r.str(), out: map[string][]Edge{}, in: map[string][]Edge{}, byFile: map[string][]*Symbol{}, pkgDirs: map[string]string{}}
	r.table = make([]string, r.count())
	for i := range r.table {
		r.table[i] = r.str()
	}
	syms := make([]Symbol, r.count())
	g.Symbols = make(map[string]*Symbol, len(syms))
	g.ranked = make([]string, 0, len(syms))
	for i := range syms {
		s := &syms[i]
		s.ID, s.Name, s.Kind, s.Pkg, s.File = r.ref(), r.ref(), Kind(r.ref()), r.ref(), r.ref()
		s.Line, s.EndLine = int(r.uint()), int(r.uint())
		s.Signature = r.ref()
		s.Test = r.uint() == 1
		if r.err != nil {
			return k, r.err
		}
		g.Symbols[s.ID] = s
		g.byFile[s.File] = append(g.byFile[s.File], s)
		g.ranked = append(g.ranked, s.ID)
	}
	slices.Sort(g.ranked)
	edges := make([]Edge, r.count())
	for i := range edges {
		edges[i] = Edge{Kind: EdgeKind(r.ref()), From: r.ref(), To: r.ref()}
		if r.err != nil {
			return k, r.err
		}
	}
	if !groupEdges(g, edges) {
		return k, errGraphFile
	}
	for range r.count() {
		p, d := r.ref(), r.ref()
		g.pkgDirs[p] = d
	}
	if r.err != nil || r.off != len(r.data) {
		return k, errGraphFile
	}
	k.g = g
	return k, nil
}

// groupEdges files edges (sorted) under their ends as Assemble does, each
// end's list cut from one array sized by a first count, so reading a
// graph file grows no slice. False when edges are not grouped by their
// start, as no graph file this package writes has them.
func groupEdges(g *Graph, edges []Edge) bool {
	outs, ins := map[string]int{}, map[string]int{}
	for _, e := range edges {
		outs[e.From]++
		ins[e.To]++
	}
	byIn := make([]Edge, 0, len(edges))
	for i := 0; i < len(edges); {
		from := edges[i].From
		j := i + outs[from]
		if g.out[from] != nil || j > len(edges) || edges[j-1].From != from {
			return false
		}
		g.out[from] = edges[i:j:j]
		i = j
	}
	for _, e := range edges {
		l := g.in[e.To]
		if l == nil {
			n := ins[e.To]
			l = byIn[len(byIn) : len(byIn) : len(byIn)+n]
			byIn = byIn[:len(byIn)+n]
		}
		g.in[e.To] = append(l, e)
	}
	return true
}
