package mutate

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// requireTool skips (or, with BCODE_REQUIRE_ALL=1, fails) when a tool the
// test needs is missing.
func requireTool(t *testing.T, name, how string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("BCODE_REQUIRE_ALL") == "1" {
			t.Fatalf("%s not found: %s", name, how)
		}
		t.Skipf("%s not found: %s", name, how)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// makeRepoIn commits base, then head over it, in a new repository in dir,
// and returns the change between them, read from `git diff` so the changed
// lines are git's, not the test's.
func makeRepoIn(t *testing.T, dir string, base, head map[string]string) *verify.Change {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	writeFiles(t, dir, base)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "base")
	writeFiles(t, dir, head)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "head")
	return changeOf(t, dir, "HEAD~1", "HEAD")
}

var hunk = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

func changeOf(t *testing.T, dir, base, head string) *verify.Change {
	t.Helper()
	ch := &verify.Change{Base: base, Head: head}
	out := git(t, dir, "diff", "-U0", "--no-renames", base, head)
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
