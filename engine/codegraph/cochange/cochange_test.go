package cochange_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/codegraph/cochange"
)

func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A real repository whose history changes Parse with Lex twice and with
// Render once: the rules must say so, with function names taken from the
// hunks, and a hostile hook or filter in .git/config must not run.
func TestMineRealRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (apt-get install git)")
	}
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	goSrc := func(parse, lex, render string) string {
		return "package p\n\nfunc Parse() int {\n\treturn " + parse + "\n}\n\nfunc Lex() int {\n\treturn " + lex + "\n}\n"
	}
	write(t, dir, "p.go", goSrc("1", "1", "1"))
	write(t, dir, "r.go", "package p\n\nfunc Render() int {\n\treturn 1\n}\n")
	write(t, dir, "m.py", "class C:\n    def meth(self):\n        return 1\n\n\ndef top():\n    return 1\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "one")
	write(t, dir, "p.go", goSrc("2", "2", "1"))
	gitT(t, dir, "commit", "-q", "-am", "parse+lex")
	write(t, dir, "p.go", goSrc("3", "3", "1"))
	write(t, dir, "m.py", "class C:\n    def meth(self):\n        return 2\n\n\ndef top():\n    return 1\n")
	gitT(t, dir, "commit", "-q", "-am", "parse+lex+meth")
	write(t, dir, "p.go", goSrc("4", "3", "1"))
	write(t, dir, "r.go", "package p\n\nfunc Render() int {\n\treturn 2\n}\n")
	gitT(t, dir, "commit", "-q", "-am", "parse+render")
	// Hostile configuration: a hook and an external diff that would
	// leave a mark if git ran them.
	mark := filepath.Join(t.TempDir(), "ran")
	gitT(t, dir, "config", "diff.external", "touch "+mark)
	gitT(t, dir, "config", "core.pager", "touch "+mark)
	write(t, dir, ".gitattributes", "*.go diff=evil\n")
	gitT(t, dir, "config", "diff.evil.textconv", "touch "+mark)

	h, err := cochange.Mine(context.Background(), dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a program named by the repository's configuration ran")
	}
	if len(h.Commits) != 4 {
		t.Fatalf("mined %d commits, want 4", len(h.Commits))
	}
	files, funcs, n := h.Related("p.go", "Parse")
	if n != 4 {
		t.Errorf("Parse changed in %d commits, want 4", n)
	}
	if r := funcs[cochange.Entity{File: "p.go", Name: "Lex"}]; r.Support != 3 || r.Confidence != 0.75 {
		t.Errorf("Parse → Lex = %+v, want support 3 of 4", r)
	}
	if r := funcs[cochange.Entity{File: "r.go", Name: "Render"}]; r.Support != 2 {
		t.Errorf("Parse → Render = %+v, want support 2", r)
	}
	if r := funcs[cochange.Entity{File: "m.py", Name: "meth"}]; r.Support != 2 {
		t.Errorf("Parse → meth = %+v, want support 2 (python method from the hunk header)", r)
	}
	if r := funcs[cochange.Entity{File: "m.py", Name: "top"}]; r.Support != 1 {
		t.Errorf("Parse → top = %+v, want support 1 (only the first commit added both)", r)
	}
	if r := files["r.go"]; r.Support != 2 {
		t.Errorf("p.go → r.go = %+v, want support 2", r)
	}
	// The cache gives the same answer from disk in a new process's shoes.
	again, err := cochange.Mine(context.Background(), dir, t.TempDir())
	if err != nil || len(again.Commits) != 4 {
		t.Fatalf("second mine: %v, %d commits", err, len(again.Commits))
	}
}

func TestParseSkipsLargeCommits(t *testing.T) {
	var b strings.Builder
	b.WriteString("\x00commit abc\n\n")
	for i := range cochange.MaxFiles + 1 {
		name := "f" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".go"
		b.WriteString("diff --git a/" + name + " b/" + name + "\n--- a/" + name + "\n+++ b/" + name + "\n@@ -1 +1 @@ func X() {\n-a\n+b\n")
	}
	h := cochange.Parse([]byte(b.String()))
	if len(h.Commits) != 0 || h.Skipped != 1 {
		t.Fatalf("commits %d skipped %d, want the large commit skipped", len(h.Commits), h.Skipped)
	}
}
