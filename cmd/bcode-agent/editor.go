//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// maxEditFile is the largest file the editor reads or writes.
const maxEditFile = 4 << 20

// editor views and edits files below the worktree. Every access goes
// through os.Root, so no path and no symbolic link — one the repository
// shipped or one a command planted — reaches a file outside the worktree.
type editor struct {
	dir  string
	root *os.Root
	cap  int
	// history holds each file's earlier contents for undo; a nil entry
	// means the file did not exist (undo of a create removes it).
	history map[string][]*string
}

type editorArgs struct {
	Command    string `json:"command"`
	Path       string `json:"path"`
	FileText   string `json:"file_text"`
	OldStr     string `json:"old_str"`
	NewStr     string `json:"new_str"`
	InsertLine *int   `json:"insert_line"`
	ViewRange  []int  `json:"view_range"`
}

func newEditor(dir string, outputCap int) (*editor, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the worktree %s: %w", dir, err)
	}
	return &editor{dir: dir, root: r, cap: outputCap, history: map[string][]*string{}}, nil
}

// rel turns the model's path (relative, or absolute inside the worktree,
// or $WORKTREE/...) into a root-relative one.
func (e *editor) rel(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if rest, ok := strings.CutPrefix(p, "$WORKTREE"); ok {
		p = "." + rest
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(e.dir, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", fmt.Errorf("%s is outside the worktree %s", p, e.dir)
		}
		p = r
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%s leaves the worktree", p)
	}
	return c, nil
}

func (e *editor) run(a editorArgs) (string, bool) {
	p, err := e.rel(a.Path)
	if err != nil {
		return "error: " + err.Error(), true
	}
	var out string
	switch a.Command {
	case "view":
		out, err = e.view(p, a.ViewRange)
	case "create":
		out, err = e.create(p, a.FileText)
	case "str_replace":
		out, err = e.strReplace(p, a.OldStr, a.NewStr)
	case "insert":
		if a.InsertLine == nil {
			err = errors.New("insert needs insert_line (0 inserts at the top)")
		} else {
			out, err = e.insert(p, *a.InsertLine, a.NewStr)
		}
	case "undo_edit":
		out, err = e.undo(p)
	default:
		err = fmt.Errorf("unknown command %q (view, create, str_replace, insert, undo_edit)", a.Command)
	}
	if err != nil {
		return "error: " + err.Error(), true
	}
	return out, false
}

func (e *editor) read(p string) (string, fs.FileMode, error) {
	f, err := e.root.Open(p)
	if err != nil {
		return "", 0, e.explain(p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if fi.IsDir() {
		return "", 0, fmt.Errorf("%s is a directory", p)
	}
	if fi.Size() > maxEditFile {
		return "", 0, fmt.Errorf("%s is %d bytes, over the editor's %d-byte limit; use the terminal (head, sed -n)", p, fi.Size(), maxEditFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEditFile+1))
	if err != nil {
		return "", 0, err
	}
	return string(b), fi.Mode().Perm(), nil
}

// explain words os.Root's refusals for the model.
func (e *editor) explain(p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist", p)
	}
	if strings.Contains(err.Error(), "escapes") {
		return fmt.Errorf("%s resolves outside the worktree (through a symbolic link or ..); refused", p)
	}
	return err
}

func (e *editor) write(p, content string, mode fs.FileMode) error {
	if len(content) > maxEditFile {
		return fmt.Errorf("new content is %d bytes, over the %d-byte limit", len(content), maxEditFile)
	}
	f, err := e.root.OpenFile(p, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, mode)
	if err != nil {
		return e.explain(p, err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (e *editor) remember(p string, old *string) {
	h := e.history[p]
	if len(h) >= 20 {
		h = h[1:]
	}
	e.history[p] = append(h, old)
}

func (e *editor) view(p string, rng []int) (string, error) {
	fi, err := e.root.Stat(p)
	if err != nil {
		return "", e.explain(p, err)
	}
	if fi.IsDir() {
		return e.list(p)
	}
	text, _, err := e.read(p)
	if err != nil {
		return "", err
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	from, to := 1, len(lines)
	if len(rng) > 0 {
		if len(rng) != 2 {
			return "", errors.New("view_range is [first, last] (last -1: to the end)")
		}
		from, to = rng[0], rng[1]
		if to == -1 {
			to = len(lines)
		}
		if from < 1 || from > max(len(lines), 1) || to < from || to > len(lines) {
			return "", fmt.Errorf("view_range [%d, %d] is outside the file's %d lines", rng[0], rng[1], len(lines))
		}
	}
	var b strings.Builder
	for i := from; i <= to && i <= len(lines); i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
		if b.Len() > e.cap {
			fmt.Fprintf(&b, "[... cut at line %d of %d; use view_range to see more ...]\n", i, len(lines))
			break
		}
	}
	return b.String(), nil
}

func (e *editor) list(p string) (string, error) {
	f, err := e.root.Open(p)
	if err != nil {
		return "", e.explain(p, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return "", err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var b strings.Builder
	for _, d := range ents {
		if d.Name() == ".git" {
			continue
		}
		name := path.Join(p, d.Name())
		switch {
		case d.IsDir():
			name += "/"
		case d.Type()&fs.ModeSymlink != 0:
			name += "@"
		}
		b.WriteString(name + "\n")
	}
	return b.String(), nil
}

func (e *editor) create(p, text string) (string, error) {
	if _, err := e.root.Lstat(p); err == nil {
		return "", fmt.Errorf("%s already exists; use str_replace or insert to change it", p)
	}
	if dir := path.Dir(p); dir != "." {
		if err := e.root.MkdirAll(dir, 0o755); err != nil {
			return "", e.explain(dir, err)
		}
	}
	f, err := e.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", e.explain(p, err)
	}
	_, werr := f.WriteString(text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", werr
	}
	e.remember(p, nil)
	return fmt.Sprintf("created %s (%d lines)", p, strings.Count(text, "\n")+boolInt(!strings.HasSuffix(text, "\n") && text != "")), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// strReplace replaces old, which must occur exactly once, with new.
func (e *editor) strReplace(p, old, new string) (string, error) {
	if old == "" {
		return "", errors.New("old_str is empty; give the exact text to replace, with enough lines around it to be unique")
	}
	text, mode, err := e.read(p)
	if err != nil {
		return "", err
	}
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_str does not occur in %s; it must match the file exactly, whitespace and indentation included (view the file first)", p)
	case n > 1:
		var lines []string
		for off := 0; ; {
			i := strings.Index(text[off:], old)
			if i < 0 {
				break
			}
			lines = append(lines, fmt.Sprint(strings.Count(text[:off+i], "\n")+1))
			off += i + 1
		}
		return "", fmt.Errorf("old_str occurs %d times in %s (lines %s); include more surrounding lines so it is unique", n, p, strings.Join(lines, ", "))
	}
	i := strings.Index(text, old)
	updated := text[:i] + new + text[i+len(old):]
	if err := e.write(p, updated, mode); err != nil {
		return "", err
	}
	e.remember(p, &text)
	return fmt.Sprintf("edited %s:\n%s", p, snippet(updated, i, len(new))), nil
}

// snippet shows the edited region with a few lines around it.
func snippet(text string, at, n int) string {
	first := strings.Count(text[:at], "\n") + 1
	last := first + strings.Count(text[at:at+n], "\n")
	lines := strings.Split(text, "\n")
	from, to := max(first-3, 1), min(last+3, len(lines))
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return b.String()
}

func (e *editor) insert(p string, after int, text string) (string, error) {
	old, mode, err := e.read(p)
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(old, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if after < 0 || after > len(lines) {
		return "", fmt.Errorf("insert_line %d is outside 0..%d (the file has %d lines)", after, len(lines), len(lines))
	}
	if after > 0 && !strings.HasSuffix(lines[after-1], "\n") {
		lines[after-1] += "\n"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	updated := strings.Join(lines[:after], "") + text + strings.Join(lines[after:], "")
	if err := e.write(p, updated, mode); err != nil {
		return "", err
	}
	e.remember(p, &old)
	at := len(strings.Join(lines[:after], ""))
	return fmt.Sprintf("inserted after line %d of %s:\n%s", after, p, snippet(updated, at, len(text)-1)), nil
}

func (e *editor) undo(p string) (string, error) {
	h := e.history[p]
	if len(h) == 0 {
		return "", fmt.Errorf("no edit of %s to undo", p)
	}
	prev := h[len(h)-1]
	if prev == nil {
		if err := e.root.Remove(p); err != nil {
			return "", e.explain(p, err)
		}
		e.history[p] = h[:len(h)-1]
		return fmt.Sprintf("undid the creation of %s (removed)", p), nil
	}
	_, mode, err := e.read(p)
	if err != nil {
		mode = 0o644
	}
	if err := e.write(p, *prev, mode); err != nil {
		return "", err
	}
	e.history[p] = h[:len(h)-1]
	return fmt.Sprintf("undid the last edit of %s", p), nil
}
