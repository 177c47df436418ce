package server

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TaskDiff answers bcode.task.diff (and bcode/taskDiff): the task's
// change, read by the server with hardened git so no client has to run git
// on the repository itself.
func (s *Server) TaskDiff(ctx context.Context, a command.TaskDiffArgs) (command.TaskDiffResult, error) {
	return s.taskDiff(ctx, command.TaskDiff, a)
}

// taskDiff is TaskDiff with the name of the method or command that asked,
// for its errors.
func (s *Server) taskDiff(ctx context.Context, method string, a command.TaskDiffArgs) (command.TaskDiffResult, error) {
	if a.ID == "" {
		return command.TaskDiffResult{}, command.Required(method, "id", "the task's ID, as bcode/tasks lists it")
	}
	if a.Path != "" {
		if err := git.CheckPath(a.Path); err != nil {
			return command.TaskDiffResult{}, command.FieldError(method, "path", "path must be a file of the repository, relative to its top with / between names: %v", err)
		}
	}
	t, err := s.task(ctx, a.ID)
	if err != nil {
		return command.TaskDiffResult{}, err
	}
	res := command.TaskDiffResult{ID: t.ID, Branch: t.Branch, Base: t.Base, Files: []command.FileDiff{}}
	repo, err := git.Open(ctx, t.Repo)
	if err != nil {
		return res, lsp.Errorf(lsp.CodeRequestFailed, "task %s: opening its repository %s: %v", t.ID, t.Repo, err)
	}
	base, err := repo.Resolve(ctx, t.Base)
	if err != nil {
		return res, lsp.Errorf(lsp.CodeRequestFailed, "task %s: its base %s is not a commit of %s any more: %v", t.ID, t.Base, t.Repo, err)
	}
	res.Base = base
	head, err := repo.Resolve(ctx, "refs/heads/"+t.Branch)
	if err != nil {
		// No branch: nothing changed yet, or a reject deleted it.
		res.Notes = append(res.Notes, fmt.Sprintf("the task's branch %s does not exist (status %s): there is nothing to show", t.Branch, t.Status))
		return res, nil
	}
	res.Head = head
	entries, err := repo.DiffTree(ctx, base, head)
	if err != nil {
		return res, lsp.Errorf(lsp.CodeRequestFailed, "task %s: %v", t.ID, err)
	}
	if a.Path != "" {
		var one []git.Entry
		for _, e := range entries {
			if e.Path == a.Path {
				one = append(one, e)
			}
		}
		if len(one) == 0 {
			return res, command.FieldError(method, "path", "task %s does not change %s (it changes %d files)", t.ID, a.Path, len(entries))
		}
		entries = one
	}
	sizes, err := blobSizes(ctx, repo, entries)
	if err != nil {
		return res, lsp.Errorf(lsp.CodeRequestFailed, "task %s: %v", t.ID, err)
	}
	files, shown, err := fileContents(ctx, repo, entries, sizes)
	if err != nil {
		return res, lsp.Errorf(lsp.CodeRequestFailed, "task %s: %v", t.ID, err)
	}
	res.Files = files
	for _, f := range files {
		if f.Omitted == command.OmittedLarge || f.Omitted == command.OmittedSubmodule {
			res.Notes = append(res.Notes, f.Note)
		}
	}
	if n := countOmitted(files, command.OmittedBudget); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d files come without contents: this answer's %d KiB were spent; ask bcode/taskDiff with their path", n, command.ContentBudget>>10))
	}
	diff, truncated, err := unifiedDiff(ctx, repo, base, head, shown)
	if err != nil {
		return res, lsp.Errorf(lsp.CodeRequestFailed, "task %s: %v", t.ID, err)
	}
	res.Diff, res.Truncated = diff, truncated
	if truncated {
		res.Notes = append(res.Notes, fmt.Sprintf("the diff text is cut at %d KiB; ask bcode/taskDiff with a path for one file", command.DiffLimit>>10))
	}
	return res, nil
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
func fileContents(ctx context.Context, repo *git.Repo, entries []git.Entry, sizes map[string]int64) ([]command.FileDiff, []string, error) {
	files := make([]command.FileDiff, len(entries))
	var want []string // blobs to read
	var shown []string
	budget := int64(command.ContentBudget)
	spent := false // once a file does not fit, none after it gets contents, so the files with contents come first
	for i, e := range entries {
		f := command.FileDiff{Path: e.Path, Status: string(e.Status)}
		if e.OldMode == submoduleMode || e.NewMode == submoduleMode {
			f.Omitted = command.OmittedSubmodule
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
		case f.BaseSize > command.FileContentLimit || f.HeadSize > command.FileContentLimit:
			f.Omitted = command.OmittedLarge
			f.Note = fmt.Sprintf("%s is too large to show here (%s before, %s after; the limit is %s): open it from the branch", e.Path, humanSize(f.BaseSize), humanSize(f.HeadSize), humanSize(command.FileContentLimit))
			shown = shown[:len(shown)-1]
		case spent || f.BaseSize+f.HeadSize > budget:
			f.Omitted = command.OmittedBudget
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
			f.Binary, f.Omitted = true, command.OmittedBinary
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

func countOmitted(files []command.FileDiff, why string) int {
	n := 0
	for _, f := range files {
		if f.Omitted == why {
			n++
		}
	}
	return n
}

// diffBatch is how many paths one git diff is given: a task may change
// thousands of files, and the text stops at DiffLimit anyway.
const diffBatch = 256

// unifiedDiff is git's diff of paths from base to head, cut at DiffLimit
// on a file boundary.
func unifiedDiff(ctx context.Context, repo *git.Repo, base, head string, paths []string) (string, bool, error) {
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
		if len(out) > command.DiffLimit {
			return cutDiff(out), true, nil
		}
	}
	return string(out), false, nil
}

// cutDiff keeps the whole files of a diff that fit in DiffLimit (or, when
// even the first does not, its lines that fit).
func cutDiff(out []byte) string {
	keep := out[:command.DiffLimit]
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
