package task

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// ChangeLimits bound what ReadChange returns, so a task that touches a
// large or binary file never costs its reader megabytes.
type ChangeLimits struct {
	// FileContent is the largest side of a file whose content is read.
	FileContent int64
	// Content bounds the contents of all files together; files past it
	// come without contents (OmittedBudget): ask for them by path.
	Content int64
	// Diff bounds the unified diff text; it is cut at a file boundary.
	Diff int
}

// Why a file's contents are left out of a Change.
const (
	OmittedBinary    = "binary"    // either side has a NUL byte in its first 8000 bytes, as git judges
	OmittedLarge     = "large"     // a side is over ChangeLimits.FileContent
	OmittedBudget    = "budget"    // ChangeLimits.Content was spent: ask with the path
	OmittedSubmodule = "submodule" // a submodule's commit, not a file
)

// Change is a task's change: its branch head against its base.
type Change struct {
	Base string // the base commit
	// Head is the branch's commit; "" when the branch does not exist (the
	// task has not changed anything yet, or a reject deleted it).
	Head string
	// Digest is the digest of the whole change Base..Head (its canonical
	// diff, whatever path asked for): what an accept of the change shown
	// names (AcceptOptions.Digest). "" when there is no Head.
	Digest string
	Files  []FileChange
	// Diff is git's unified diff of the files whose text is shown, cut at
	// ChangeLimits.Diff (then Truncated).
	Diff      string
	Truncated bool
	// Notes say, in words, what is left out and why.
	Notes []string
}

// FileChange is one changed file of a task.
type FileChange struct {
	Path string
	// Status is git's letter: A, M, D or T.
	Status                   string
	BaseContent, HeadContent *string // nil where the file does not exist or Omitted is set
	BaseSize, HeadSize       int64
	Binary                   bool
	Omitted, Note            string
}

// ErrNotInChange is engine.ErrNotInChange: ReadChange was asked for a path
// the task does not change.
var ErrNotInChange = engine.ErrNotInChange

// ReadChange reads t's change with hardened git, within lim; path, when
// set, narrows it to that one file (a slash path relative to the
// repository's top, already checked with git.CheckPath).
func ReadChange(ctx context.Context, t *engine.Task, path string, lim ChangeLimits) (*Change, error) {
	res := &Change{Base: t.Base, Files: []FileChange{}}
	repo, err := git.Open(ctx, t.Repo)
	if err != nil {
		return nil, fmt.Errorf("task %s: opening its repository %s: %w", t.ID, t.Repo, err)
	}
	base, err := repo.Resolve(ctx, t.Base)
	if err != nil {
		return nil, fmt.Errorf("task %s: its base %s is not a commit of %s any more: %w", t.ID, t.Base, t.Repo, err)
	}
	res.Base = base
	head, err := repo.Resolve(ctx, "refs/heads/"+t.Branch)
	if err != nil {
		// No branch: nothing changed yet, or a reject deleted it.
		res.Notes = append(res.Notes, fmt.Sprintf("the task's branch %s does not exist (status %s): there is nothing to show", t.Branch, t.Status))
		return res, nil
	}
	res.Head = head
	if res.Digest, err = changeDigest(ctx, repo, base, head); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	entries, err := repo.DiffTree(ctx, base, head)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	if path != "" {
		if entries, err = onlyPath(entries, path); err != nil {
			return nil, fmt.Errorf("%w: task %s does not change %s (it changes %d files)", err, t.ID, path, len(entries))
		}
	}
	sizes, err := blobSizes(ctx, repo, entries)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	files, shown, err := fileContents(ctx, repo, entries, sizes, lim)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	res.Files = files
	for _, f := range files {
		if f.Omitted == OmittedLarge || f.Omitted == OmittedSubmodule {
			res.Notes = append(res.Notes, f.Note)
		}
	}
	if n := countOmitted(files, OmittedBudget); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d files come without contents: this answer's %d KiB were spent; ask for each with its path", n, lim.Content>>10))
	}
	res.Diff, res.Truncated, err = unifiedDiff(ctx, repo, base, head, shown, lim.Diff)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	if res.Truncated {
		res.Notes = append(res.Notes, fmt.Sprintf("the diff text is cut at %d KiB; ask with a path for one file", lim.Diff>>10))
	}
	return res, nil
}

// onlyPath is the entries of path; entries itself and ErrNotInChange when
// there are none.
func onlyPath(entries []git.Entry, path string) ([]git.Entry, error) {
	var one []git.Entry
	for _, e := range entries {
		if e.Path == path {
			one = append(one, e)
		}
	}
	if len(one) == 0 {
		return entries, ErrNotInChange
	}
	return one, nil
}

const submoduleMode = "160000"

func absent(blob string) bool { return blob == "" || strings.Trim(blob, "0") == "" }

// blobSizes asks git for the size of every blob the entries name, without
// reading them.
func blobSizes(ctx context.Context, repo *git.Repo, entries []git.Entry) (map[string]int64, error) {
	var in bytes.Buffer
	var ids []string
	for _, e := range entries {
		for _, side := range []struct{ blob, mode string }{{e.OldBlob, e.OldMode}, {e.NewBlob, e.NewMode}} {
			if !absent(side.blob) && side.mode != submoduleMode {
				ids = append(ids, side.blob)
				in.WriteString(side.blob + "\n")
			}
		}
	}
	sizes := map[string]int64{}
	if len(ids) == 0 {
		return sizes, nil
	}
	out, err := repo.GitInput(ctx, &in, "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return nil, fmt.Errorf("reading the sizes of the changed files: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, size, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("reading the sizes of the changed files: unexpected line %q", line)
		}
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("reading the sizes of the changed files: %q: object %s", line, id)
		}
		sizes[id] = n
	}
	return sizes, nil
}

// fileContents fills in each file's sides within the limits, and returns
// the paths whose text belongs in the unified diff (all but large files and
// submodules).
func fileContents(ctx context.Context, repo *git.Repo, entries []git.Entry, sizes map[string]int64, lim ChangeLimits) ([]FileChange, []string, error) {
	files := make([]FileChange, len(entries))
	var want []string // blobs to read
	var shown []string
	budget := lim.Content
	spent := false // once a file does not fit, none after it gets contents, so the files with contents come first
	for i, e := range entries {
		f := FileChange{Path: e.Path, Status: string(e.Status)}
		if e.OldMode == submoduleMode || e.NewMode == submoduleMode {
			f.Omitted = OmittedSubmodule
			f.Note = fmt.Sprintf("%s is a submodule: its commit changes from %s to %s", e.Path, shortID(e.OldBlob), shortID(e.NewBlob))
			files[i] = f
			continue
		}
		if !absent(e.OldBlob) {
			f.BaseSize = sizes[e.OldBlob]
		}
		if !absent(e.NewBlob) {
			f.HeadSize = sizes[e.NewBlob]
		}
		shown = append(shown, e.Path)
		switch {
		case f.BaseSize > lim.FileContent || f.HeadSize > lim.FileContent:
			f.Omitted = OmittedLarge
			f.Note = fmt.Sprintf("%s is too large to show here (%s before, %s after; the limit is %s): open it from the branch", e.Path, humanSize(f.BaseSize), humanSize(f.HeadSize), humanSize(lim.FileContent))
			shown = shown[:len(shown)-1]
		case spent || f.BaseSize+f.HeadSize > budget:
			f.Omitted = OmittedBudget
			f.Note = fmt.Sprintf("%s comes without its contents: this answer's budget was spent; ask for it with its path", e.Path)
			spent = true
		default:
			budget -= f.BaseSize + f.HeadSize
			for _, b := range []string{e.OldBlob, e.NewBlob} {
				if !absent(b) {
					want = append(want, b)
				}
			}
		}
		files[i] = f
	}
	blobs, err := repo.ReadBlobs(ctx, want)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the changed files: %w", err)
	}
	for i, e := range entries {
		f := &files[i]
		if f.Omitted != "" {
			continue
		}
		var old, new []byte
		if !absent(e.OldBlob) {
			old = blobs[e.OldBlob]
		}
		if !absent(e.NewBlob) {
			new = blobs[e.NewBlob]
		}
		if binary(old) || binary(new) {
			f.Binary, f.Omitted = true, OmittedBinary
			f.Note = fmt.Sprintf("%s is a binary file (%s before, %s after)", e.Path, humanSize(f.BaseSize), humanSize(f.HeadSize))
			continue
		}
		if !absent(e.OldBlob) {
			s := string(old)
			f.BaseContent = &s
		}
		if !absent(e.NewBlob) {
			s := string(new)
			f.HeadContent = &s
		}
	}
	return files, shown, nil
}

// binary is git's test: a NUL byte in the first 8000 bytes.
func binary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

func countOmitted(files []FileChange, why string) int {
	n := 0
	for _, f := range files {
		if f.Omitted == why {
			n++
		}
	}
	return n
}

// diffBatch is how many paths one git diff is given: a task may change
// thousands of files, and the text stops at its limit anyway.
const diffBatch = 256

// unifiedDiff is git's diff of paths from base to head, cut at limit
// on a file boundary.
func unifiedDiff(ctx context.Context, repo *git.Repo, base, head string, paths []string, limit int) (string, bool, error) {
	var out []byte
	for len(paths) > 0 {
		n := min(diffBatch, len(paths))
		// The repository runs with literal pathspecs, so a path is never
		// read as a glob or as pathspec magic.
		args := append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--ignore-submodules=none", base, head, "--"}, paths[:n]...)
		b, err := repo.Git(ctx, args...)
		if err != nil {
			return "", false, fmt.Errorf("diffing %s..%s: %w", shortID(base), shortID(head), err)
		}
		out = append(out, b...)
		paths = paths[n:]
		if len(out) > limit {
			return cutDiff(out, limit), true, nil
		}
	}
	return string(out), false, nil
}

// cutDiff keeps the whole files of a diff that fit in limit (or, when
// even the first does not, its lines that fit).
func cutDiff(out []byte, limit int) string {
	keep := out[:limit]
	if i := bytes.LastIndex(keep, []byte("\ndiff --git ")); i > 0 {
		return string(keep[:i+1])
	}
	if i := bytes.LastIndexByte(keep, '\n'); i > 0 {
		return string(keep[:i+1])
	}
	return ""
}

func shortID(id string) string {
	if absent(id) {
		return "(none)"
	}
	return id[:min(len(id), 12)]
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
