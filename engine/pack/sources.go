package pack

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/sandbox"
)

// maxFileBytes bounds one file read: a pack never needs more of a file.
const maxFileBytes = 4 << 20

// sources reads repository files through the confined root, once each,
// and redacts on request.
type sources struct {
	conf     *sandbox.Confined
	redactor Redactor
	files    map[string][]string // lines, unredacted; nil entry: unreadable
	errs     map[string]error
	redacted map[string]redaction
}

func newSources(conf *sandbox.Confined, r Redactor) *sources {
	return &sources{conf: conf, redactor: r, files: map[string][]string{}, errs: map[string]error{}, redacted: map[string]redaction{}}
}

func (s *sources) lines(file string) ([]string, error) {
	if l, ok := s.files[file]; ok {
		return l, s.errs[file]
	}
	data, err := s.conf.ReadFile(file, maxFileBytes)
	if err != nil {
		s.files[file], s.errs[file] = nil, err
		return nil, err
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	l := strings.Split(text, "\n")
	if len(l) > 0 && l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	s.files[file] = l
	return l, nil
}

// snippet returns lines [from, to] of file (1-based, clamped). The pack's
// planner redacts what it places.
func (s *sources) snippet(file string, from, to int) (string, error) {
	l, err := s.lines(file)
	if err != nil {
		return "", err
	}
	from, to = max(from, 1), min(to, len(l))
	if from > to {
		return "", nil
	}
	return strings.Join(l[from-1:to], "\n"), nil
}

// redaction is one text's redacted form and how many secrets it held.
type redaction struct {
	text string
	n    int
}

// redact returns text with its secrets removed. Results are cached: the
// planner redacts only what it places, and may place the same text in
// several passes; scanning is most of a warm pack's time otherwise.
func (s *sources) redact(text string) (string, int) {
	if r, ok := s.redacted[text]; ok {
		return r.text, r.n
	}
	out, n := s.redactor.Redact(text)
	s.redacted[text] = redaction{out, n}
	return out, n
}

// checkSelection validates a selection against the file it names, as a
// user would want to hear about it.
func (s *sources) checkSelection(sel engine.Selection) (engine.Selection, error) {
	f := strings.TrimPrefix(path.Clean(strings.ReplaceAll(sel.File, "\\", "/")), "./")
	if sel.File == "" || path.IsAbs(f) || f == ".." || strings.HasPrefix(f, "../") {
		return sel, fmt.Errorf("%w: %q is not a path inside the repository", ErrBadSelection, sel.File)
	}
	sel.File = f
	if sel.StartLine < 1 || sel.EndLine < sel.StartLine {
		return sel, fmt.Errorf("%w: lines %d-%d: want 1 <= start <= end", ErrBadSelection, sel.StartLine, sel.EndLine)
	}
	l, err := s.lines(f)
	if err != nil {
		return sel, fmt.Errorf("%w: %s cannot be read inside the repository: %v", ErrBadSelection, f, err)
	}
	if sel.EndLine > len(l) {
		return sel, fmt.Errorf("%w: lines %d-%d out of range: %s has %d lines", ErrBadSelection, sel.StartLine, sel.EndLine, f, len(l))
	}
	return sel, nil
}

// indexPendingNote says that the Go index is partial: how many packages
// its deadline left out, the first few of them, and why, so a pack made
// from part of the module never passes for one made from all of it.
func indexPendingNote(st codegraph.Stats) string {
	names := st.Pending
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(st.Pending)-5)
	}
	return fmt.Sprintf("Go index partial: %d package(s) not yet indexed (%s%s): %s; a later pack indexes them",
		len(st.Pending), strings.Join(names, ", "), more, st.Why)
}

// lang is the code-fence language of a file.
func lang(file string) string {
	switch path.Ext(file) {
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".md":
		return "markdown"
	}
	return ""
}

func fence(file, text string) string {
	// A fence longer than any backtick run inside, so code cannot close it.
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + lang(file) + "\n" + text + "\n" + ticks + "\n"
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
