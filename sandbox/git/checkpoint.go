package git

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// Limits bound what SnapshotTree takes in from a hostile tree.
type Limits struct {
	// MaxFileBytes: a larger file is left out (and reported), never
	// read. <= 0: no limit.
	MaxFileBytes int64
	// MaxTotalBytes bounds the bytes hashed by one snapshot; files past it
	// are left out (and reported). <= 0: no limit.
	MaxTotalBytes int64
}

// Skipped is something in a hostile tree a snapshot did not take in.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"` // one of the Skip... codes
	Detail string `json:"detail,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

// Reasons a path is left out of a snapshot of a hostile tree.
const (
	// SkipNestedRepo: a directory holding .git (a directory, a gitfile, or
	// anything else of that name). git would treat it as a submodule and
	// run status inside it with its own configuration.
	SkipNestedRepo = "nested_repository"
	// SkipBareRepo: a directory that is a git directory itself (HEAD,
	// objects/ and refs/), which git would read as a repository.
	SkipBareRepo = "bare_repository"
	// SkipTooLarge: a file over Limits.MaxFileBytes.
	SkipTooLarge = "file_too_large"
	// SkipOverBudget: a file that would take the snapshot over
	// Limits.MaxTotalBytes.
	SkipOverBudget = "checkpoint_budget"
	// SkipSpecial: a fifo, socket or device: nothing git stores, and a
	// reader of a fifo blocks forever.
	SkipSpecial = "special_file"
	// SkipIgnoreFile: a .gitignore that is not a small regular file; its
	// rules are not applied.
	SkipIgnoreFile = "unusable_ignore_file"
	// SkipUnreadable: a directory bcode cannot list (its permissions).
	SkipUnreadable = "unreadable_directory"
)

// maxIgnoreFile bounds a .gitignore file's size; past it the file's rules
// are not applied (git itself would read any size into memory).
const maxIgnoreFile = 1 << 20

// walked is one path the walk found.
type walked struct {
	path string
	fi   fs.FileInfo
}

// SnapshotTree writes the working tree of r, which must come from
// LinkedWorktree, into the object database and returns its tree: the files
// and links bcode found below r.Dir itself, with parent (a commit or tree)
// deciding what is tracked. It is the checkpoint of a tree an agent wrote,
// so nothing in it is trusted:
//
//   - git never walks the tree: bcode lists it through os.Root, never
//     following a link, and hashes what it opened with
//     `hash-object --no-filters` (no filter, attribute or config of the
//     tree's applies);
//   - a directory holding .git (a nested repository or a gitfile,
//     whatever it points to) or shaped like a bare repository is not
//     entered: it is left out and reported, never run as a submodule;
//   - .gitignore rules apply to untracked files as `git add --all` would
//     apply them, but git reads them from copies in a private directory
//     (only small regular files are copied), so a fifo or a huge file
//     named .gitignore cannot stall it;
//   - fifos, sockets and devices are left out, and so are files over the
//     limits (a tracked one keeps its parent's content), each reported;
//   - gitlinks the parent already has are kept as they are.
//
// The admin index of the linked tree is only read, as a cache: a file whose
// stat data match its entry is not read again.
func (r *Repo) SnapshotTree(ctx context.Context, parent string, lim Limits) (string, []Skipped, error) {
	ptree, err := r.resolveTree(ctx, parent)
	if err != nil {
		return "", nil, err
	}
	return r.snapshot(ctx, ptree, lim)
}

// CheckpointSpec says how Checkpoint commits.
type CheckpointSpec struct {
	Branch  string   // the branch the worktree is on; the commit moves it
	Message string   // the commit message
	Config  []string // "-c" settings for commit-tree (the committer's identity)
	// BeforeRef, when set, is called between writing the commit and
	// moving the branch (a crash point for tests).
	BeforeRef func()
	// BeforeIndex, when set, is called between moving the branch and
	// setting the index to the new commit (a crash point for the kill
	// tests: recovery must repair an index left at the commit before).
	BeforeIndex func()
}

// Checkpoint snapshots the worktree (SnapshotTree) on top of the head of
// spec.Branch and, when the tree differs from the head's, commits it and
// moves the branch by compare-and-swap from the head it read, so a commit
// never lands on one it did not see. The worktree's index is then set to
// the new tree (it is only a cache for the next snapshot, and for git run
// in the worktree). It returns the new commit ("" when nothing changed),
// the head it read, and what the snapshot left out. Every git process here
// is plumbing, run with the worktree's git directory named explicitly.
func (r *Repo) Checkpoint(ctx context.Context, spec CheckpointSpec, lim Limits) (commit, parent string, skipped []Skipped, err error) {
	if err := checkRev(spec.Branch); err != nil {
		return "", "", nil, err
	}
	ref := "refs/heads/" + spec.Branch
	out, err := r.plumbing(ctx, invocation{args: []string{"rev-parse", ref + "^{commit}", ref + "^{tree}"}})
	if err != nil {
		return "", "", nil, fmt.Errorf("reading the head of %s: %w", spec.Branch, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", "", nil, fmt.Errorf("reading the head of %s: unexpected %q", spec.Branch, out)
	}
	parent, ptree := f[0], f[1]
	tree, skipped, err := r.snapshot(ctx, ptree, lim)
	if err != nil {
		return "", parent, nil, err
	}
	if tree == ptree {
		return "", parent, skipped, nil
	}
	args := append(append([]string(nil), spec.Config...), "commit-tree", tree, "-p", parent, "-m", spec.Message)
	out, err = r.plumbing(ctx, invocation{args: args})
	if err != nil {
		return "", parent, skipped, fmt.Errorf("committing the worktree's changes: %w", err)
	}
	commit = strings.TrimSpace(string(out))
	if spec.BeforeRef != nil {
		spec.BeforeRef()
	}
	if _, err := r.plumbing(ctx, invocation{args: []string{"update-ref", "-m", "bcode checkpoint", ref, commit, parent}}); err != nil {
		return "", parent, skipped, fmt.Errorf("moving %s from %.12s to %.12s (did another runner move it?): %w", spec.Branch, parent, commit, err)
	}
	if spec.BeforeIndex != nil {
		spec.BeforeIndex()
	}
	// The commit stands whether or not this works.
	r.plumbing(ctx, invocation{args: []string{"read-tree", commit}})
	return commit, parent, skipped, nil
}

// snapshot is SnapshotTree on top of the tree ptree.
func (r *Repo) snapshot(ctx context.Context, ptree string, lim Limits) (string, []Skipped, error) {
	if len(r.env) == 0 {
		return "", nil, errors.New("SnapshotTree: the repository was not opened with LinkedWorktree")
	}
	s := &treeSnapshot{r: r, lim: lim, final: map[string]hashedFile{}, seen: map[string]fs.FileInfo{}}
	if err := s.readParent(ctx, ptree); err != nil {
		return "", nil, err
	}

	tmp, err := scratch.MkdirTemp("bcode-checkpoint-*")
	if err != nil {
		return "", nil, err
	}
	defer RemoveTree(tmp)
	s.tmp, s.shadow = tmp, filepath.Join(tmp, "shadow")
	if err := os.Mkdir(s.shadow, 0o700); err != nil {
		return "", nil, err
	}

	conf, err := sandbox.OpenConfined(r.Dir)
	if err != nil {
		return "", nil, err
	}
	defer conf.Close()
	var dirs []walked
	if err := walkHostile(ctx, conf, s.shadow, s.gitlinks, &s.files, &dirs, &s.skipped); err != nil {
		return "", nil, fmt.Errorf("listing the worktree %s: %w", r.Dir, err)
	}
	if err := s.readIgnored(ctx); err != nil {
		return "", nil, err
	}
	s.dropIgnoredSkips()

	cache, indexMtime, err := r.indexCache(ctx)
	if err != nil {
		return "", nil, err
	}
	s.w = &worktreeReader{conf: conf, top: r.Dir, tmp: tmp, dirs: map[string]bool{}, fileMode: r.fileMode, symlinks: r.symlinks}
	s.keepLeftOut()
	toHash := s.chooseFiles(cache, indexMtime)
	hashed, _, err := r.hashWorktreeFiles(ctx, s.w, toHash)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint of %s: %w", r.Dir, err)
	}
	for _, h := range hashed {
		s.final[h.path] = h
	}

	sort.Slice(s.skipped, func(i, j int) bool { return s.skipped[i].Path < s.skipped[j].Path })
	r.saveStatCache(s.final, s.seen)
	if sameAsParent(s.final, s.tracked) {
		return ptree, s.skipped, nil
	}
	tree, err := r.writeSnapshotTree(ctx, tmp, s.final)
	if err != nil {
		return "", nil, err
	}
	return tree, s.skipped, nil
}

// treeSnapshot is one snapshot's state: the parent tree's entries, what the
// walk found, what .gitignore rules leave out, and the entries of the tree
// being made.
type treeSnapshot struct {
	r      *Repo
	lim    Limits
	tmp    string // scratch directory, removed after
	shadow string // the tree's directories, with copies of its .gitignore files
	w      *worktreeReader

	tracked  map[string]treeEntry // the parent tree's entries
	gitlinks map[string]bool      // the parent's gitlinks, kept as they are

	files   []walked
	skipped []Skipped
	ignored map[string]bool // paths ignore rules leave out (not those below them)

	final  map[string]hashedFile  // the new tree's entries
	seen   map[string]fs.FileInfo // stat data of what the tree took in, for the next snapshot
	budget int64                  // bytes taken in so far, against lim.MaxTotalBytes
}

// readParent reads the parent tree's entries and its gitlinks.
func (s *treeSnapshot) readParent(ctx context.Context, ptree string) error {
	pents, err := s.r.lsTree(ctx, ptree, true)
	if err != nil {
		return err
	}
	s.tracked = make(map[string]treeEntry, len(pents))
	s.gitlinks = map[string]bool{}
	for _, e := range pents {
		s.tracked[e.path] = e
		if e.mode == "160000" {
			s.gitlinks[e.path] = true
		}
	}
	return nil
}

// readIgnored asks git which untracked paths are ignored, themselves or by
// a directory above them; tracked files are never ignored, so with no
// untracked path git is not asked at all.
func (s *treeSnapshot) readIgnored(ctx context.Context) error {
	var ask []string
	asked := map[string]bool{}
	addAsk := func(p string) {
		for ; p != "." && !asked[p]; p = path.Dir(p) {
			asked[p] = true
			ask = append(ask, p)
		}
	}
	for _, sk := range s.skipped {
		addAsk(sk.Path)
	}
	for _, f := range s.files {
		if _, ok := s.tracked[f.path]; !ok {
			addAsk(f.path)
		}
	}
	var err error
	s.ignored, err = s.r.checkIgnore(ctx, s.shadow, s.tmp, ask)
	return err
}

// isIgnored: ignore rules leave p out, or a directory above it.
func (s *treeSnapshot) isIgnored(p string) bool {
	if s.ignored[p] {
		return true
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if s.ignored[d] {
			return true
		}
	}
	return false
}

// dropIgnoredSkips forgets what the walk left out in ignored places:
// nested repositories and special files inside ignored directories would
// not have been added either, so they are not worth reporting.
func (s *treeSnapshot) dropIgnoredSkips() {
	kept := s.skipped[:0]
	for _, sk := range s.skipped {
		if !s.isIgnored(sk.Path) {
			kept = append(kept, sk)
		}
	}
	s.skipped = kept
}

// keepParent gives p its parent tree's entry, if it has one (not a
// gitlink: those are kept apart).
func (s *treeSnapshot) keepParent(p string) {
	if e, ok := s.tracked[p]; ok && e.mode != "160000" {
		s.final[p] = hashedFile{path: p, mode: e.mode, id: e.id}
	}
}

// keepLeftOut seeds the new tree with the parent's gitlinks, and with the
// parent's content for what the walk left out: a nested repository made
// in a tracked directory, or a tracked file replaced by a fifo, deletes
// nothing.
func (s *treeSnapshot) keepLeftOut() {
	for p := range s.gitlinks {
		e := s.tracked[p]
		s.final[p] = hashedFile{path: p, mode: e.mode, id: e.id}
	}
	for _, sk := range s.skipped {
		s.keepParent(sk.Path)
		prefix := sk.Path + "/"
		for p := range s.tracked {
			if strings.HasPrefix(p, prefix) {
				s.keepParent(p)
			}
		}
	}
}

// chooseFiles decides, for each file the walk found, whether it is left out
// (ignored and untracked, or over a limit), taken from the cache (its stat
// data match an entry that is not racily clean), or to be hashed; it
// returns those to hash.
func (s *treeSnapshot) chooseFiles(cache map[string]indexEntry, indexMtime [2]uint32) []candidate {
	var toHash []candidate
	for _, f := range s.files {
		_, isTracked := s.tracked[f.path]
		if !isTracked && s.isIgnored(f.path) {
			continue
		}
		s.w.realParents(f.path)
		indexMode := ""
		if e, ok := cache[f.path]; ok {
			indexMode = e.mode
			if s.w.mode(f.fi, e.mode) == e.mode && statMatches(e, f.fi) && !racy(e, indexMtime) {
				s.final[f.path] = hashedFile{path: f.path, mode: e.mode, id: e.oid}
				s.seen[f.path] = f.fi
				continue
			}
		}
		if f.fi.Mode().IsRegular() && !s.withinLimits(f.path, f.fi.Size()) {
			continue
		}
		toHash = append(toHash, candidate{path: f.path, indexMode: indexMode, tracked: isTracked})
		s.seen[f.path] = f.fi
	}
	return toHash
}

// withinLimits says whether a regular file of size bytes at p fits the
// limits, counting it against the total when it does; one that does not is
// reported and keeps its parent's content.
func (s *treeSnapshot) withinLimits(p string, size int64) bool {
	if s.lim.MaxFileBytes > 0 && size > s.lim.MaxFileBytes {
		s.skipped = append(s.skipped, Skipped{Path: p, Reason: SkipTooLarge, Size: size,
			Detail: fmt.Sprintf("%d bytes, over the limit of %d (task.max_file_bytes)", size, s.lim.MaxFileBytes)})
		s.keepParent(p)
		return false
	}
	if s.lim.MaxTotalBytes > 0 && s.budget+size > s.lim.MaxTotalBytes {
		s.skipped = append(s.skipped, Skipped{Path: p, Reason: SkipOverBudget, Size: size,
			Detail: fmt.Sprintf("the checkpoint already took %d bytes; the limit is %d (task.max_checkpoint_bytes)", s.budget, s.lim.MaxTotalBytes)})
		s.keepParent(p)
		return false
	}
	s.budget += size
	return true
}

// writeSnapshotTree writes a tree of exactly the entries in final, through
// a fresh index in tmp.
func (r *Repo) writeSnapshotTree(ctx context.Context, tmp string, final map[string]hashedFile) (string, error) {
	paths := make([]string, 0, len(final))
	for p := range final {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var info bytes.Buffer
	for _, p := range paths {
		h := final[p]
		fmt.Fprintf(&info, "%s %s\t%s\x00", h.mode, h.id, h.path)
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := r.plumbing(ctx, invocation{env: env, stdin: &info, args: []string{"update-index", "-z", "--add", "--index-info"}}); err != nil {
		return "", fmt.Errorf("checkpoint of %s: %w", r.Dir, err)
	}
	out, err := r.plumbing(ctx, invocation{env: env, args: []string{"write-tree"}})
	if err != nil {
		return "", fmt.Errorf("checkpoint of %s: %w", r.Dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// sameAsParent: the snapshot holds exactly the parent tree's entries.
func sameAsParent(final map[string]hashedFile, tracked map[string]treeEntry) bool {
	if len(final) != len(tracked) {
		return false
	}
	for p, h := range final {
		e, ok := tracked[p]
		if !ok || e.mode != h.mode || e.id != h.id {
			return false
		}
	}
	return true
}

// walkHostile lists every regular file and link below root (files) and
// every directory entered (dirs), reporting what it will not take in. It
// recreates the directory structure under shadow, with a copy of each
// usable .gitignore, for checkIgnore.
func walkHostile(ctx context.Context, conf *sandbox.Confined, shadow string, gitlinks map[string]bool, files, dirs *[]walked, skipped *[]Skipped) error {
	stack := []string{"."}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		// Listed through the confined reader: a directory swapped since
		// it was seen for a link is refused, and one swapped for a fifo
		// cannot block the open. Entries come in name order, so which
		// files a budget leaves out does not depend on the file system's.
		ents, err := conf.ReadDir(d)
		if err != nil && d != "." {
			*skipped = append(*skipped, Skipped{Path: d, Reason: SkipUnreadable, Detail: "directory could not be read: " + trimRoot(err)})
			continue
		} else if err != nil {
			return err
		}
		join := func(name string) string {
			if d == "." {
				return name
			}
			return d + "/" + name
		}
		if d != "." {
			// The shadow directory exists even for a skipped one, so a
			// directory-only ignore rule can match it.
			if err := os.Mkdir(filepath.Join(shadow, filepath.FromSlash(d)), 0o700); err != nil {
				return err
			}
			if nested, what := repoMarker(ents); nested != "" {
				*skipped = append(*skipped, Skipped{Path: d, Reason: nested, Detail: what})
				continue
			}
			*dirs = append(*dirs, walked{path: d})
		}
		for _, e := range ents {
			name := e.Name()
			p := join(name)
			if strings.EqualFold(name, ".git") {
				continue // the top's own gitfile, or (handled above) a nested one
			}
			if gitlinks[p] {
				continue // the parent's gitlink stays as it is
			}
			typ := e.Type()
			switch {
			case typ.IsDir():
				stack = append(stack, p)
			case typ.IsRegular() || typ&fs.ModeSymlink != 0:
				fi, err := e.Info()
				if err != nil {
					continue // gone since the listing
				}
				if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
					continue
				}
				*files = append(*files, walked{path: p, fi: fi})
				if name == ".gitignore" {
					copyIgnoreFile(conf, p, fi, shadow, skipped)
				}
			default:
				*skipped = append(*skipped, Skipped{Path: p, Reason: SkipSpecial, Detail: typ.String()})
			}
		}
	}
	return nil
}

// repoMarker says whether a directory with these entries is a repository
// git would treat as one: a .git entry of any kind (a directory, a gitfile
// or anything else; its content is not read), or HEAD, objects/ and refs/
// as in a bare repository.
func repoMarker(ents []fs.DirEntry) (reason, what string) {
	var head, objects, refs bool
	for _, e := range ents {
		switch name := e.Name(); {
		case strings.EqualFold(name, ".git"):
			kind := "a .git " + strings.TrimPrefix(e.Type().String(), "-")
			switch {
			case e.Type().IsDir():
				kind = "a .git directory (an embedded repository)"
			case e.Type().IsRegular():
				kind = "a .git file (a gitfile naming a repository elsewhere)"
			case e.Type()&fs.ModeSymlink != 0:
				kind = "a .git symbolic link"
			}
			return SkipNestedRepo, kind
		case name == "HEAD":
			head = !e.IsDir()
		case name == "objects":
			objects = e.IsDir()
		case name == "refs":
			refs = e.IsDir()
		}
	}
	if head && objects && refs {
		return SkipBareRepo, "HEAD, objects/ and refs/: a bare repository"
	}
	return "", ""
}

// copyIgnoreFile copies a .gitignore into the shadow tree when it is a
// regular file of a sane size, read through the confined reader.
func copyIgnoreFile(conf *sandbox.Confined, p string, fi fs.FileInfo, shadow string, skipped *[]Skipped) {
	if !fi.Mode().IsRegular() || fi.Size() > maxIgnoreFile {
		why := "not a regular file"
		if fi.Mode().IsRegular() {
			why = fmt.Sprintf("%d bytes, over %d", fi.Size(), maxIgnoreFile)
		}
		*skipped = append(*skipped, Skipped{Path: p, Reason: SkipIgnoreFile, Detail: why + "; its rules are not applied"})
		return
	}
	data, err := conf.ReadFile(p, maxIgnoreFile)
	if _, refused := sandbox.Refused(err); refused {
		*skipped = append(*skipped, Skipped{Path: p, Reason: SkipIgnoreFile, Detail: "changed while read; its rules are not applied"})
		return
	}
	if err != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(shadow, filepath.FromSlash(p)), data, 0o600)
}

// trimRoot keeps an os.Root error short.
func trimRoot(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkIgnore answers which of paths `git add --all` would leave out as
// ignored, by running check-ignore over the shadow tree (where only the
// copied .gitignore files exist) with r's info/exclude.
func (r *Repo) checkIgnore(ctx context.Context, shadow, tmp string, paths []string) (map[string]bool, error) {
	ignored := map[string]bool{}
	if len(paths) == 0 {
		return ignored, nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString("./") // never read as pathspec magic (":(...)")
		in.WriteString(p)
		in.WriteByte(0)
	}
	env := []string{"GIT_WORK_TREE=" + shadow, "GIT_INDEX_FILE=" + filepath.Join(tmp, "no-index")}
	inv := invocation{dir: shadow, env: append(append([]string(nil), r.env...), env...), drivers: r.drivers, stdin: &in, noLiteral: true,
		args: []string{"check-ignore", "--no-index", "--stdin", "-z", "--verbose", "--non-matching"}}
	out, err := run(ctx, inv)
	if err != nil {
		var ge *Error
		if !errors.As(err, &ge) || ge.ExitCode != 1 { // 1: nothing ignored
			return nil, fmt.Errorf("reading the worktree's ignore rules: %w", err)
		}
	}
	// Records: source NUL line NUL pattern NUL path NUL.
	f := strings.Split(string(out), "\x00")
	for i := 0; i+3 < len(f); i += 4 {
		pattern, p := f[i+2], strings.TrimPrefix(f[i+3], "./")
		if pattern != "" && !strings.HasPrefix(pattern, "!") {
			ignored[p] = true
		}
	}
	return ignored, nil
}

// statCacheFile, in the linked tree's admin directory (the host's, never
// the agent's), maps each path the last snapshot took in to its stat data
// and blob id, so the next snapshot reads only what changed since.
const statCacheFile = "bcode-checkpoint-stat"

// statCacheEntry is one path of the stat cache.
type statCacheEntry struct {
	Mode string    `json:"m"`
	OID  string    `json:"o"`
	St   [6]uint32 `json:"s"` // as indexStat: mtime s/ns, ctime s/ns, inode, size
}

// saveStatCache writes the stat cache; failing to is only slower later.
func (r *Repo) saveStatCache(final map[string]hashedFile, seen map[string]fs.FileInfo) {
	entries := make(map[string]statCacheEntry, len(seen))
	for p, fi := range seen {
		h, ok := final[p]
		st, statOK := indexStat(fi)
		if ok && statOK && h.id != "" {
			entries[p] = statCacheEntry{Mode: h.mode, OID: h.id, St: st}
		}
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return
	}
	_ = writeFileAtomic(filepath.Join(r.GitDir, statCacheFile), data)
}

// maxStatCache caps what the stat cache's decoder reads.
const maxStatCache = 1 << 30

// indexCache is what SnapshotTree knows of unchanged files: the stat cache
// of the last snapshot when there is one, else the linked tree's admin
// index (stage 0 entries), and the time it was written (the reference for
// racily clean entries).
func (r *Repo) indexCache(ctx context.Context) (map[string]indexEntry, [2]uint32, error) {
	var mtime [2]uint32
	if f, err := sandbox.OpenPath(filepath.Join(r.GitDir, statCacheFile)); err == nil {
		fi, serr := f.Stat()
		var entries map[string]statCacheEntry
		derr := json.NewDecoder(io.LimitReader(f, maxStatCache)).Decode(&entries)
		f.Close()
		if serr == nil && derr == nil {
			mt := fi.ModTime()
			mtime = [2]uint32{uint32(mt.Unix()), uint32(mt.Nanosecond())}
			cache := make(map[string]indexEntry, len(entries))
			for p, e := range entries {
				cache[p] = indexEntry{mode: e.Mode, oid: e.OID, path: p,
					mtimeS: e.St[0], mtimeNS: e.St[1], ctimeS: e.St[2], ctimeNS: e.St[3], ino: e.St[4], size: e.St[5]}
			}
			return cache, mtime, nil
		}
	}
	fi, err := os.Stat(filepath.Join(r.GitDir, "index"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]indexEntry{}, mtime, nil
	}
	if err != nil {
		return nil, mtime, err
	}
	mt := fi.ModTime()
	mtime = [2]uint32{uint32(mt.Unix()), uint32(mt.Nanosecond())}
	out, err := r.plumbing(ctx, invocation{args: []string{"ls-files", "-z", "--stage", "--debug"}})
	if err != nil {
		return nil, mtime, fmt.Errorf("reading the worktree's index: %w", err)
	}
	entries, err := parseIndexDebug(out)
	if err != nil {
		return nil, mtime, err
	}
	cache := make(map[string]indexEntry, len(entries))
	for _, e := range entries {
		if e.stage == 0 && e.flags&(flagIntentToAdd|flagSkipWorktree) == 0 && e.mode != "160000" {
			cache[e.path] = e
		}
	}
	return cache, mtime, nil
}
