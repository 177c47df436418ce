package mutate

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

// makeRepoIn commits base, then head over it, in a new repository in dir,
// and returns the change between them, read from `git diff` so the changed
// lines are git's, not the test's.
func makeRepoIn(t *testing.T, dir string, base, head map[string]string) *verify.Change {
	t.Helper()
	r := testrepo.Init(t, dir)
	r.Write(base)
	r.Commit("base")
	r.Write(head)
	r.Commit("head")
	return changeOf(t, dir, "HEAD~1", "HEAD")
}

var hunk = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

func changeOf(t *testing.T, dir, base, head string) *verify.Change {
	t.Helper()
	ch := &verify.Change{Base: base, Head: head}
	out := testrepo.Open(t, dir).Git("diff", "-U0", "--no-renames", base, head)
	var cur *verify.FileChange
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "+++ "):
			name := strings.TrimPrefix(line, "+++ ")
			if name == "/dev/null" {
				cur = nil
				continue
			}
			ch.Files = append(ch.Files, verify.FileChange{Path: strings.TrimPrefix(name, "b/"), Status: verify.Modified})
			cur = &ch.Files[len(ch.Files)-1]
		case cur != nil && hunk.MatchString(line):
			g := hunk.FindStringSubmatch(line)
			start, _ := strconv.Atoi(g[1])
			n := 1
			if g[2] != "" {
				n, _ = strconv.Atoi(g[2])
			}
			if n > 0 {
				cur.Changed = append(cur.Changed, verify.LineRange{Start: start, End: start + n - 1})
			}
		}
	}
	return ch
}

// lineOf returns the 1-based line of the first line of content containing s.
func lineOf(t *testing.T, content, s string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not found", s)
	return 0
}
