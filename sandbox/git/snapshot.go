package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// In-memory index entry flags as `ls-files --debug` prints them (git's
// cache.h): the entries whose index record does not describe the file on
// disk the usual way.
const (
	flagIntentToAdd  = 1 << 29 // `git add -N`: write-tree would skip it
	flagSkipWorktree = 1 << 30 // sparse checkout: not in the working tree on purpose
)

// indexEntry is one line of `ls-files --stage --debug`.
type indexEntry struct {
	mode  string
	oid   string
	stage int
	path  string
	// The stat data git recorded, truncated to 32 bits as in the index.
	ctimeS, ctimeNS, mtimeS, mtimeNS uint32
	ino, size, flags                 uint32
}

// SnapshotWorktree writes the working tree as it is now (tracked files
// with their current content, deletions applied, untracked files that are
// not ignored, executable bits and symbolic links kept) into the object
// database and returns the id of its tree. The user's index, HEAD and files
// are left untouched: the work happens on a copy of the index.
//
// Only files whose stat data differ from the index (or that git would call
// racily clean) are read, so a large, mostly unchanged tree costs a listing
// and an lstat per file. Files are read by bcode, confined to the working
// tree and never through a symbolic link, and handed to
// `hash-object --no-filters`, so no clean filter, fsmonitor or attribute
// conversion is involved. Submodules keep the commit their index entry
// records; sparse-checkout (skip-worktree) entries keep their index blob.
func (r *Repo) SnapshotWorktree(ctx context.Context) (string, error) {
	tmp, err := scratch.MkdirTemp("bcode-index-*")
	if err != nil {
		return "", fmt.Errorf("snapshot of the working tree: %w", err)
	}
	defer os.RemoveAll(tmp)
	indexFile := filepath.Join(tmp, "index")
	indexMtime, err := copyIndex(filepath.Join(r.GitDir, "index"), indexFile)
	if err != nil {
		return "", fmt.Errorf("snapshot of the working tree: copying the index: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + indexFile}

	// Untracked files are listed while tracked ones are compared; every
	// return below waits for the listing, which reads the copied index.
	type listing struct {
		out []byte
		err error
	}
	untracked := make(chan listing, 1)
	go func() {
		out, err := r.plumbing(ctx, invocation{env: env, args: []string{"ls-files", "-z", "--others", "--exclude-standard"}})
		untracked <- listing{out, err}
	}()

	out, err := r.plumbing(ctx, invocation{env: env, args: []string{"ls-files", "-z", "--stage", "--debug"}})
	if err != nil {
		<-untracked
		return "", fmt.Errorf("snapshot of the working tree: listing the index: %w", err)
	}
	entries, err := parseIndexDebug(out)
	if err != nil {
		<-untracked
		return "", fmt.Errorf("snapshot of the working tree: %w", err)
	}
	conf, err := sandbox.OpenConfined(r.Dir)
	if err != nil {
		<-untracked
		return "", fmt.Errorf("snapshot of the working tree: %w", err)
	}
	defer conf.Close()
	w := &worktreeReader{conf: conf, top: r.Dir, tmp: tmp, dirs: map[string]bool{}, fileMode: r.fileMode, symlinks: r.symlinks}

	check, tracked := trackedToCheck(w, entries)
	removals, changed, err := changedTracked(w, check, indexMtime)
	if err != nil {
		<-untracked
		return "", fmt.Errorf("snapshot of the working tree: %w", err)
	}
	u := <-untracked
	if u.err != nil {
		return "", fmt.Errorf("snapshot of the working tree: listing untracked files: %w", u.err)
	}
	changed = append(changed, untrackedCandidates(u.out, tracked)...)

	hashed, gone, err := r.hashWorktreeFiles(ctx, w, changed)
	if err != nil {
		return "", fmt.Errorf("snapshot of the working tree: %w", err)
	}
	return r.writeWorktreeTree(ctx, env, append(removals, gone...), hashed)
}

// trackedPath is a tracked path of the index, and what lstat says of its
// file now.
type trackedPath struct {
	e        indexEntry
	unmerged bool // stages 1-3: the working tree's file replaces them all
	fi       fs.FileInfo
	err      error
}

// trackedToCheck groups the index's stages of each path and returns the
// paths whose files must be looked at (not gitlinks nor skip-worktree
// entries, unless unmerged: those keep what the index records), and every
// tracked path.
func trackedToCheck(w *worktreeReader, entries []indexEntry) (check []trackedPath, tracked map[string]bool) {
	tracked = map[string]bool{}
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].path == entries[i].path {
			j++
		}
		e := entries[i]
		unmerged := j-i > 1 || e.stage != 0
		i = j
		tracked[e.path] = true
		if !unmerged && (e.mode == "160000" || e.flags&flagSkipWorktree != 0) {
			continue
		}
		w.realParents(e.path) // fills the directory cache the workers read
		check = append(check, trackedPath{e: e, unmerged: unmerged})
	}
	return check, tracked
}

// changedTracked lstats the files of check and sorts them: those gone (or
// no longer a file git could track) are removals, those that may have
// changed are to be hashed, and the rest keep their index entries.
func changedTracked(w *worktreeReader, check []trackedPath, indexMtime [2]uint32) (removals []string, changed []candidate, err error) {
	// One lstat per tracked file is most of a snapshot's cost; spread it
	// over the CPUs.
	parallel(len(check), func(i int) { check[i].fi, check[i].err = w.lstat(check[i].e.path) })
	for _, c := range check {
		if c.err != nil {
			return nil, nil, c.err
		}
		if c.fi == nil { // gone, or not a file git could track
			removals = append(removals, c.e.path)
			continue
		}
		if unchangedSinceIndex(w, c, indexMtime) {
			continue
		}
		changed = append(changed, candidate{path: c.e.path, indexMode: c.e.mode, tracked: true})
	}
	return removals, changed, nil
}

// unchangedSinceIndex: the file is as its index entry records it (same
// mode and stat data, not racily clean), so its blob stands. An unmerged
// or intent-to-add entry has no blob that could.
func unchangedSinceIndex(w *worktreeReader, c trackedPath, indexMtime [2]uint32) bool {
	e := c.e
	return !c.unmerged && e.flags&flagIntentToAdd == 0 && w.mode(c.fi, e.mode) == e.mode && statMatches(e, c.fi) && !racy(e, indexMtime)
}

// untrackedCandidates are the files of an `ls-files -z --others` listing
// to hash: not tracked, and not nested repositories (listed with a
// trailing slash; git will not descend into them, and they are not part of
// this tree).
func untrackedCandidates(listing []byte, tracked map[string]bool) []candidate {
	var out []candidate
	for _, p := range strings.Split(string(listing), "\x00") {
		if p == "" || strings.HasSuffix(p, "/") || tracked[p] {
			continue
		}
		out = append(out, candidate{path: p})
	}
	return out
}

// writeWorktreeTree applies the removals and the hashed files to the
// copied index (env names it) and writes its tree.
func (r *Repo) writeWorktreeTree(ctx context.Context, env, removals []string, hashed []hashedFile) (string, error) {
	var info bytes.Buffer
	for _, p := range removals {
		fmt.Fprintf(&info, "0 %s\t%s\x00", r.nullID(), p)
	}
	for _, h := range hashed {
		fmt.Fprintf(&info, "%s %s\t%s\x00", h.mode, h.id, h.path)
	}
	if info.Len() > 0 {
		if _, err := r.plumbing(ctx, invocation{env: env, stdin: &info, args: []string{"update-index", "-z", "--index-info"}}); err != nil {
			return "", fmt.Errorf("snapshot of the working tree: %w", err)
		}
	}
	tree, err := r.plumbing(ctx, invocation{env: env, args: []string{"write-tree"}})
	if err != nil {
		return "", fmt.Errorf("snapshot of the working tree: %w", err)
	}
	return strings.TrimSpace(string(tree)), nil
}

// copyIndex copies the index to dst and returns the index's modification
// time (the reference for racily clean entries). A repository without an
// index (no commit, nothing added) gets an empty one.
func copyIndex(src, dst string) (mtime [2]uint32, err error) {
	in, err := sandbox.OpenPath(src)
	if errors.Is(err, fs.ErrNotExist) {
		return mtime, nil
	}
	if err != nil {
		return mtime, err
	}
	defer in.Close()
	// ModTime is built from the same stat fields git reads (st_mtim on
	// linux), so this is portable without changing what is compared.
	fi, err := in.Stat()
	if err != nil {
		return mtime, err
	}
	mt := fi.ModTime()
	mtime = [2]uint32{uint32(mt.Unix()), uint32(mt.Nanosecond())}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return mtime, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return mtime, err
	}
	return mtime, out.Close()
}

// statMatches compares what lstat says now with what the index recorded.
// A platform whose stat data cannot be compared (see stat_*.go) never
// matches, so every tracked file is hashed: slower, never wrong.
func statMatches(e indexEntry, fi fs.FileInfo) bool {
	st, ok := indexStat(fi)
	if !ok {
		return false
	}
	return st == [6]uint32{e.mtimeS, e.mtimeNS, e.ctimeS, e.ctimeNS, e.ino, e.size}
}

// racy reports an entry whose file may have changed after git recorded it
// within the same timestamp: its recorded mtime is not older than the index.
func racy(e indexEntry, index [2]uint32) bool {
	if e.mtimeS != index[0] {
		return e.mtimeS > index[0]
	}
	return e.mtimeNS >= index[1]
}

// parseIndexDebug reads `ls-files -z --stage --debug`: each entry is
// "<mode> <oid> <stage>\t<path>\0" followed by five "  name: value" lines.
func parseIndexDebug(out []byte) ([]indexEntry, error) {
	var entries []indexEntry
	for len(out) > 0 {
		nul := bytes.IndexByte(out, 0)
		if nul < 0 {
			return nil, fmt.Errorf("ls-files: entry without terminator: %.80q", out)
		}
		head := string(out[:nul])
		out = out[nul+1:]
		meta, path, ok := strings.Cut(head, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ls-files: malformed entry %q", head)
		}
		stage, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("ls-files: malformed stage in %q", head)
		}
		e := indexEntry{mode: f[0], oid: f[1], stage: stage, path: path}
		var stat [5]string
		for k := range stat {
			nl := bytes.IndexByte(out, '\n')
			if nl < 0 {
				return nil, fmt.Errorf("ls-files: truncated stat data for %q", path)
			}
			stat[k] = string(out[:nl])
			out = out[nl+1:]
		}
		// "  ctime: S:N", "  mtime: S:N", "  dev: D\tino: I",
		// "  uid: U\tgid: G", "  size: Z\tflags: F" (flags in hex).
		var perr error
		field := func(line, name string) string {
			_, v, ok := strings.Cut(line, name+": ")
			if !ok {
				perr = fmt.Errorf("ls-files: no %s in %q for %q", name, line, path)
				return ""
			}
			v, _, _ = strings.Cut(v, "\t")
			return v
		}
		num := func(v string, base int) uint32 {
			n, err := strconv.ParseUint(v, base, 32)
			if err != nil && perr == nil {
				perr = fmt.Errorf("ls-files: bad number %q for %q", v, path)
			}
			return uint32(n)
		}
		pair := func(v string) (uint32, uint32) {
			a, b, _ := strings.Cut(v, ":")
			return num(a, 10), num(b, 10)
		}
		e.ctimeS, e.ctimeNS = pair(field(stat[0], "ctime"))
		e.mtimeS, e.mtimeNS = pair(field(stat[1], "mtime"))
		e.ino = num(field(stat[2], "ino"), 10)
		e.size = num(field(stat[4], "size"), 10)
		e.flags = num(field(stat[4], "flags"), 16)
		if perr != nil {
			return nil, perr
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// candidate is a working-tree file whose content must be hashed.
type candidate struct {
	path      string
	indexMode string // the index entry's mode; "" for an untracked file
	tracked   bool
}

// hashedFile is a candidate's new index entry.
type hashedFile struct {
	path, mode, id string
}

// worktreeReader reads working-tree files without following a symbolic
// link anywhere: a path below a linked directory is gone from the tree (as
// git sees it), and a link is recorded as its target text.
type worktreeReader struct {
	conf               *sandbox.Confined
	top                string // the root's path, for the fast scan
	tmp                string
	dirs               map[string]bool // directory path -> is a real directory
	fileMode, symlinks bool
	links              int
}

// mode is the index mode of a file on disk, given the mode its index entry
// had ("" for a new file). With core.fileMode or core.symlinks off, the
// index, not the file system, knows the executable bit and which files are
// links.
func (w *worktreeReader) mode(fi fs.FileInfo, indexMode string) string {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "120000"
	}
	if !w.symlinks && indexMode == "120000" {
		return "120000" // a link checked out as a plain file
	}
	if !w.fileMode {
		if indexMode == "100755" || indexMode == "100644" {
			return indexMode
		}
		return "100644"
	}
	if fi.Mode()&0o100 != 0 {
		return "100755"
	}
	return "100644"
}

// lstat describes path, or returns nil when the path does not name a
// regular file or link reachable without passing through a link.
//
// This is the scan that decides what to hash, run on every tracked file, so
// it uses plain lstat on the joined path (an os.Root lookup per file costs
// several system calls): the parents were just checked to be real
// directories, and a parent swapped for a link afterwards could at worst
// make a file look changed. What is read is opened through os.Root (open).
func (w *worktreeReader) lstat(path string) (fs.FileInfo, error) {
	if !w.realParents(path) {
		return nil, nil
	}
	fi, err := os.Lstat(filepath.Join(w.top, path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 && !fi.Mode().IsRegular() {
		return nil, nil // a directory, fifo or socket: nothing git tracks
	}
	return fi, nil
}

// open returns an open file holding the content to hash for path (the
// file itself, or for a link a file of ours holding its target) and the
// mode to record, or a nil file when the path is gone.
func (w *worktreeReader) open(c candidate) (*os.File, string, error) {
	fi, err := w.lstat(c.path)
	if err != nil || fi == nil {
		return nil, "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := w.conf.Readlink(c.path)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", c.path, err)
		}
		w.links++
		name := filepath.Join(w.tmp, "link-"+strconv.Itoa(w.links))
		if err := os.WriteFile(name, []byte(target), 0o600); err != nil {
			return nil, "", err
		}
		f, err := sandbox.OpenPath(name)
		return f, "120000", err
	}
	// The confined reader decides on what it opened: the path may have
	// been swapped since lstat (for a link, a fifo), and only a regular
	// file beneath the tree is opened.
	f, err := w.conf.Open(c.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil
		}
		if _, refused := sandbox.Refused(err); refused {
			return nil, "", fmt.Errorf("%s changed while the working tree was snapshotted; try again", c.path)
		}
		return nil, "", fmt.Errorf("%s: %w", c.path, err)
	}
	now, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("%s: %w", c.path, err)
	}
	return f, w.mode(now, c.indexMode), nil
}

// realParents reports whether every directory above path is a real
// directory (not a link), caching answers per directory. It is not safe for
// concurrent use; lstat (which calls it) is, once realParents has seen
// every path.
func (w *worktreeReader) realParents(path string) bool {
	dir := filepath.Dir(path)
	if dir == "." {
		return true
	}
	if ok, seen := w.dirs[dir]; seen {
		return ok
	}
	ok := w.realParents(dir)
	if ok {
		fi, err := os.Lstat(filepath.Join(w.top, dir))
		ok = err == nil && fi.IsDir()
	}
	w.dirs[dir] = ok
	return ok
}

// parallel calls fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/256+1)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for start := 0; start < n; start += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				fn(i)
			}
		}(start, min(start+chunk, n))
	}
	wg.Wait()
}

// fdBatch bounds how many open files one hash-object process receives.
const fdBatch = 200

// hashWorktreeFiles writes each candidate's content as a blob. git reads
// the very files bcode opened and checked: they are inherited descriptors
// named /dev/fd/N, so nothing can swap a path for a link between bcode's
// checks and git's read. Candidates that vanished come back in gone
// (tracked ones must then be removed from the index).
func (r *Repo) hashWorktreeFiles(ctx context.Context, w *worktreeReader, cs []candidate) (hashed []hashedFile, gone []string, err error) {
	for start := 0; start < len(cs); start += fdBatch {
		var files []*os.File
		var batch []hashedFile
		closeAll := func() {
			for _, f := range files {
				f.Close()
			}
		}
		var paths strings.Builder
		for _, c := range cs[start:min(start+fdBatch, len(cs))] {
			f, mode, err := w.open(c)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			if f == nil {
				if c.tracked {
					gone = append(gone, c.path)
				}
				continue
			}
			fmt.Fprintf(&paths, "/dev/fd/%d\n", 3+len(files))
			files = append(files, f)
			batch = append(batch, hashedFile{path: c.path, mode: mode})
		}
		if len(files) == 0 {
			continue
		}
		out, err := r.plumbing(ctx, invocation{
			args:  []string{"hash-object", "-w", "--no-filters", "--stdin-paths"},
			stdin: strings.NewReader(paths.String()),
			extra: files,
		})
		closeAll()
		if err != nil {
			return nil, nil, fmt.Errorf("hashing changed files: %w", err)
		}
		ids := strings.Fields(string(out))
		if len(ids) != len(batch) {
			return nil, nil, fmt.Errorf("hashing changed files: git returned %d ids for %d files", len(ids), len(batch))
		}
		for i := range batch {
			batch[i].id = ids[i]
		}
		hashed = append(hashed, batch...)
	}
	return hashed, gone, nil
}
