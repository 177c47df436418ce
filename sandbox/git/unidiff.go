package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Hunk is one "@@ -OldStart,OldLines +NewStart,NewLines @@" range.
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
}

// FileDiff is one file of a unified diff. OldPath is "" for a file the diff
// adds and NewPath is "" for one it deletes (git's /dev/null); git's "a/"
// and "b/" prefixes are removed.
type FileDiff struct {
	OldPath, NewPath string
	Hunks            []Hunk
	Binary           bool
}

// maxLineCount bounds the numbers a hunk header may carry, so arithmetic on
// them cannot overflow.
const maxLineCount = 1 << 30

// ParseUnifiedDiff reads a unified diff as git prints it: "diff --git"
// headers with their extended lines (modes, new/deleted file, renames,
// index), quoted paths, /dev/null, "Binary files ... differ", hunks and "\
// No newline at end of file" markers. Plain `diff -u` output (no "diff
// --git" lines) is read too. Hunk bodies are consumed by their line counts,
// so a removed line that reads "-- x" is never taken for a header. Malformed
// input is an error naming the line, never a panic.
func ParseUnifiedDiff(r io.Reader) ([]FileDiff, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	p := &diffParser{lines: splitLines(data)}
	return p.parse()
}

func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// fileState collects what the lines of one file say about its paths; which
// source wins is decided when the file ends.
type fileState struct {
	diff                  FileDiff
	gitOld, gitNew        string // from "diff --git"
	hasGitNames           bool
	minus, plus           string // from "---" and "+++"
	hasMinus, hasPlus     bool
	renameFrom, renameTo  string
	hasRename             bool
	created, deleted      bool
	gitHeader, hunksBegan bool
}

func (f *fileState) finish() FileDiff {
	d := f.diff
	switch {
	case f.hasMinus:
		d.OldPath = f.minus
	case f.hasRename:
		d.OldPath = f.renameFrom
	case f.hasGitNames:
		d.OldPath = f.gitOld
	}
	switch {
	case f.hasPlus:
		d.NewPath = f.plus
	case f.hasRename:
		d.NewPath = f.renameTo
	case f.hasGitNames:
		d.NewPath = f.gitNew
	}
	if f.created {
		d.OldPath = ""
	}
	if f.deleted {
		d.NewPath = ""
	}
	return d
}

type diffParser struct {
	lines []string
	i     int
	files []FileDiff
	cur   *fileState
}

func (p *diffParser) errorf(format string, args ...any) error {
	return fmt.Errorf("diff line %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

func (p *diffParser) flush() {
	if p.cur != nil {
		p.files = append(p.files, p.cur.finish())
		p.cur = nil
	}
}

func (p *diffParser) parse() ([]FileDiff, error) {
	for p.i < len(p.lines) {
		line := p.lines[p.i]
		switch {
		case strings.HasPrefix(line, "diff --git "):
			p.flush()
			p.cur = &fileState{gitHeader: true}
			if old, nw, ok := parseGitHeaderNames(line[len("diff --git "):]); ok {
				p.cur.gitOld, p.cur.gitNew, p.cur.hasGitNames = old, nw, true
			}
			p.i++
		case strings.HasPrefix(line, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ "):
			// A plain unified diff starts a file here; so does a second
			// "---" in one git section (which git never prints).
			if p.cur == nil || p.cur.hasMinus || p.cur.hunksBegan || !p.cur.gitHeader {
				p.flush()
				p.cur = &fileState{}
			}
			old, err := parseFileLine(line[4:], "a/")
			if err != nil {
				return nil, p.errorf("%v", err)
			}
			nw, err := parseFileLine(p.lines[p.i+1][4:], "b/")
			if err != nil {
				p.i++
				return nil, p.errorf("%v", err)
			}
			p.cur.minus, p.cur.hasMinus = old, true
			p.cur.plus, p.cur.hasPlus = nw, true
			if old == "" {
				p.cur.created = true
			}
			if nw == "" {
				p.cur.deleted = true
			}
			p.i += 2
		case strings.HasPrefix(line, "@@@"):
			return nil, p.errorf("combined diffs are not supported")
		case strings.HasPrefix(line, "@@ "):
			if p.cur == nil {
				return nil, p.errorf("hunk outside any file")
			}
			if err := p.hunk(); err != nil {
				return nil, err
			}
		case p.cur == nil:
			p.i++ // text before the first file (a commit message, say)
		default:
			if err := p.extended(line); err != nil {
				return nil, err
			}
			p.i++
		}
	}
	p.flush()
	return p.files, nil
}

// extended reads one of git's extended header lines; anything else outside
// a hunk is ignored, as git apply does.
func (p *diffParser) extended(line string) error {
	c := p.cur
	unq := func(s string) (string, error) {
		if strings.HasPrefix(s, `"`) {
			u, rest, err := unquoteC(s)
			if err != nil || rest != "" {
				return "", p.errorf("bad quoted path %q", s)
			}
			return u, nil
		}
		return s, nil
	}
	var err error
	switch {
	case strings.HasPrefix(line, "new file mode "):
		c.created = true
	case strings.HasPrefix(line, "deleted file mode "):
		c.deleted = true
	case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
		_, rest, _ := strings.Cut(line, " from ")
		c.renameFrom, err = unq(rest)
		c.hasRename = true
	case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
		_, rest, _ := strings.Cut(line, " to ")
		c.renameTo, err = unq(rest)
		c.hasRename = true
	case strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"),
		line == "GIT binary patch":
		c.diff.Binary = true
		if !c.hasGitNames && !c.hasMinus {
			// A plain diff's binary notice is the only place its names are.
			if old, nw, ok := parseBinaryNames(line); ok {
				c.minus, c.plus, c.hasMinus, c.hasPlus = old, nw, true, true
				c.created, c.deleted = c.created || old == "", c.deleted || nw == ""
			}
		}
	}
	return err
}

// hunk reads a hunk header and consumes exactly the lines it counts.
func (p *diffParser) hunk() error {
	h, err := parseHunkHeader(p.lines[p.i])
	if err != nil {
		return p.errorf("%v", err)
	}
	p.cur.hunksBegan = true
	p.i++
	oldLeft, newLeft := h.OldLines, h.NewLines
	for oldLeft > 0 || newLeft > 0 {
		if p.i >= len(p.lines) {
			return p.errorf("hunk ends early: %d old and %d new lines missing", oldLeft, newLeft)
		}
		l := p.lines[p.i]
		switch {
		case l == "" || l[0] == ' ':
			// An empty line is context whose leading space was stripped.
			oldLeft--
			newLeft--
		case l[0] == '-':
			oldLeft--
		case l[0] == '+':
			newLeft--
		case l[0] == '\\':
		default:
			return p.errorf("unexpected line in hunk: %.40q", l)
		}
		if oldLeft < 0 || newLeft < 0 {
			return p.errorf("hunk has more lines than its header counts")
		}
		p.i++
	}
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], `\`) {
		p.i++ // "\ No newline at end of file" after the last line
	}
	p.cur.diff.Hunks = append(p.cur.diff.Hunks, h)
	return nil
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@[ section]".
func parseHunkHeader(line string) (Hunk, error) {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return Hunk{}, fmt.Errorf("bad hunk header %.60q", line)
	}
	ranges, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return Hunk{}, fmt.Errorf("bad hunk header %.60q", line)
	}
	oldR, newR, ok := strings.Cut(ranges, " +")
	if !ok {
		return Hunk{}, fmt.Errorf("bad hunk header %.60q", line)
	}
	var h Hunk
	var err error
	if h.OldStart, h.OldLines, err = parseRange(oldR); err != nil {
		return Hunk{}, fmt.Errorf("bad hunk header %.60q: %v", line, err)
	}
	if h.NewStart, h.NewLines, err = parseRange(newR); err != nil {
		return Hunk{}, fmt.Errorf("bad hunk header %.60q: %v", line, err)
	}
	return h, nil
}

func parseRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err = parseCount(a)
	if err != nil {
		return 0, 0, err
	}
	count = 1
	if hasCount {
		if count, err = parseCount(b); err != nil {
			return 0, 0, err
		}
	}
	return start, count, nil
}

func parseCount(s string) (int, error) {
	if s == "" || len(s) > 10 {
		return 0, fmt.Errorf("bad number %q", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad number %q", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxLineCount {
		return 0, fmt.Errorf("number out of range %q", s)
	}
	return n, nil
}

// parseFileLine reads the name of a "---" or "+++" line: /dev/null is "",
// a quoted name is unquoted, an unquoted one ends at a tab (git adds one
// after names with spaces; diff -u puts a timestamp there), and the git
// prefix is removed.
func parseFileLine(s, prefix string) (string, error) {
	var name string
	if strings.HasPrefix(s, `"`) {
		u, _, err := unquoteC(s)
		if err != nil {
			return "", fmt.Errorf("bad quoted path %.60q", s)
		}
		name = u
	} else {
		name, _, _ = strings.Cut(s, "\t")
	}
	if name == "/dev/null" {
		return "", nil
	}
	return strings.TrimPrefix(name, prefix), nil
}

// parseGitHeaderNames reads the two names of "diff --git a/X b/Y". Quoted
// names are exact. Unquoted names with spaces are ambiguous unless both are
// the same path, which is the only case git leaves to this line (renames
// and copies carry "rename from/to" lines, content changes "---"/"+++").
func parseGitHeaderNames(s string) (oldName, newName string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		a, rest, err := unquoteC(s)
		if err != nil || !strings.HasPrefix(rest, " ") {
			return "", "", false
		}
		b, ok := parseOneName(rest[1:])
		if !ok {
			return "", "", false
		}
		return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/"), true
	}
	if i := strings.Index(s, ` "`); i >= 0 {
		b, ok := parseOneName(s[i+1:])
		if ok {
			return strings.TrimPrefix(s[:i], "a/"), strings.TrimPrefix(b, "b/"), true
		}
	}
	// "a/P b/P": the two halves around the middle space are equal.
	if len(s)%2 == 1 {
		mid := len(s) / 2
		a, b := s[:mid], s[mid+1:]
		if s[mid] == ' ' && strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return a[2:], b[2:], true
		}
	}
	return "", "", false
}

func parseOneName(s string) (string, bool) {
	if strings.HasPrefix(s, `"`) {
		u, rest, err := unquoteC(s)
		return u, err == nil && rest == ""
	}
	return s, s != ""
}

// parseBinaryNames reads "Binary files A and B differ" of a plain diff.
func parseBinaryNames(line string) (oldName, newName string, ok bool) {
	s := strings.TrimSuffix(strings.TrimPrefix(line, "Binary files "), " differ")
	a, b, found := strings.Cut(s, " and ")
	if !found {
		return "", "", false
	}
	oldName, err1 := parseFileLine(a, "a/")
	newName, err2 := parseFileLine(b, "b/")
	return oldName, newName, err1 == nil && err2 == nil
}

// unquoteC reads one C-style quoted string as git writes paths (\a \b \t
// \n \v \f \r \" \\ and three-digit octal bytes) from the start of s and
// returns it with the rest of s after the closing quote.
func unquoteC(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, errors.New("not quoted")
	}
	var b bytes.Buffer
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			i++
			if i >= len(s) {
				return "", "", errors.New("unterminated escape")
			}
			switch e := s[i]; e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'v':
				b.WriteByte('\v')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\':
				b.WriteByte(e)
			case '0', '1', '2', '3':
				if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
					return "", "", errors.New("bad octal escape")
				}
				b.WriteByte((e-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
			default:
				return "", "", fmt.Errorf("unknown escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("unterminated quote")
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// pathspecLimit is the most paths DiffHunks passes on the command line;
// beyond it the whole diff is read and filtered, so no argument list can
// grow past the system's limit.
const pathspecLimit = 1000

// DiffHunks returns the zero-context hunks of every file that differs from
// base to head (commits or trees), limited to paths when paths is not
// empty. The key is the file's new path (its old path when it is deleted);
// a path whose type changed has both its deletion and its addition hunks.
//
// The diff is forced to plain text (--text) so a .gitattributes cannot hide
// a file's lines by calling it binary, and every setting of the
// repository's that would change what is counted (external diff, textconv,
// prefixes, inter-hunk context, relative paths) is overridden.
func (r *Repo) DiffHunks(ctx context.Context, base, head string, paths []string) (map[string][]Hunk, error) {
	for _, rev := range []string{base, head} {
		if err := checkRev(rev); err != nil {
			return nil, err
		}
	}
	args := []string{"diff-tree", "-r", "-p", "-U0", "--inter-hunk-context=0", "--text",
		"--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--no-relative",
		"--ignore-submodules=none", "--src-prefix=a/", "--dst-prefix=b/", base, head}
	want := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			return nil, errors.New("DiffHunks: empty path")
		}
		want[p] = true
	}
	if len(paths) > 0 && len(paths) <= pathspecLimit {
		args = append(args, "--")
		args = append(args, paths...)
	}
	out, err := r.plumbing(ctx, invocation{args: args})
	if err != nil {
		return nil, fmt.Errorf("diff of %s..%s: %w", base, head, err)
	}
	files, err := ParseUnifiedDiff(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("diff of %s..%s: %w", base, head, err)
	}
	hunks := map[string][]Hunk{}
	for _, f := range files {
		key := f.NewPath
		if key == "" {
			key = f.OldPath
		}
		if len(want) > 0 && !want[key] {
			continue
		}
		hunks[key] = append(hunks[key], f.Hunks...)
	}
	return hunks, nil
}
