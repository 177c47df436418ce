package secrets

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScanGitHistoryIgnoresRepoAllowlists plants every way gitleaks lets a
// repository silence it, plus repository settings that would hide content
// from `git log -p` or run a program, and expects every secret found.
func TestScanGitHistoryIgnoresRepoAllowlists(t *testing.T) {
	r := newTestRepo(t)
	r.WriteFile("README.md", "hello\n")
	first := r.Commit("init")

	r.WriteFile("app/config.go", "package app\n\n// old key\nconst key = \""+fakeAWSKey()+"\"\n")
	r.WriteFile("notes/todo.txt", "rotate "+fakeGitHubToken()+" // gitleaks:allow\n")
	withSecrets := r.Commit("add config")

	// Allowlists a repository would use to hide them.
	r.WriteFile(".gitleaks.toml", `title = "mine"
[extend]
useDefault = true
disabledRules = ["aws-access-token", "github-pat", "private-key"]
[allowlist]
paths = ['''.*''']
regexes = ['''.*''']
`)
	r.WriteFile(".gitleaksignore", withSecrets+":app/config.go:aws-access-token:4\napp/config.go:aws-access-token:4\nnotes/todo.txt:github-pat:1\n")
	// A -diff attribute makes git print "Binary files differ" instead of
	// the content.
	r.WriteFile(".gitattributes", "*.txt -diff\n*.key -diff\n")
	r.WriteFile("app/config.go", "package app\n\nconst key = \"\"\n")
	r.WriteFile("secret/deploy.key", fakePrivateKey())
	keyCommit := r.Commit("remove the key, add ignores")

	// A branch never merged still counts.
	r.Git("checkout", "-q", "-b", "experiment", first)
	r.WriteFile("exp/run.sh", "export CANARY="+fakeCanary()+"\n")
	canaryCommit := r.Commit("experiment")
	r.Git("checkout", "-q", "main")

	// Repository config that would hide content or run programs.
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"diff.noprefix", "true"},
		{"diff.external", script},
		{"log.showSignature", "true"},
		{"gpg.program", script},
		{"core.fsmonitor", script},
		{"core.pager", script},
		{"diff.txt.textconv", script},
	} {
		r.Git("config", kv[0], kv[1])
	}

	s := newTestScanner(t, fakeCanary())
	got, err := ScanGitHistory(context.Background(), r.Dir, s)
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ commit, path, rule string }
	wants := map[want]int{ // line of each
		{withSecrets, "app/config.go", "aws-access-token"}: 4,
		{withSecrets, "notes/todo.txt", "github-pat"}:      1,
		{keyCommit, "secret/deploy.key", "private-key"}:    1,
		{canaryCommit, "exp/run.sh", KnownSecretRule}:      1,
	}
	seen := map[want]bool{}
	for _, f := range got {
		w := want{f.Commit, f.Path, f.RuleID}
		line, ok := wants[w]
		if !ok {
			t.Errorf("unexpected finding %s %s:%d %s", f.Commit[:8], f.Path, f.Line, f.RuleID)
			continue
		}
		if f.Line != line {
			t.Errorf("%s at line %d, want %d", f.Path, f.Line, line)
		}
		seen[w] = true
	}
	for w := range wants {
		if !seen[w] {
			t.Errorf("missing %s in %s (commit %s)", w.rule, w.path, w.commit[:8])
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a program from the repository's config ran during the scan")
	}

	// Deterministic: the same order every time.
	again, err := ScanGitHistory(context.Background(), r.Dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(got) {
		t.Fatalf("second scan found %d, first %d", len(again), len(got))
	}
	for i := range got {
		if got[i] != again[i] {
			t.Fatalf("order differs at %d: %+v vs %+v", i, got[i], again[i])
		}
	}
}

func TestScanGitHistoryErrors(t *testing.T) {
	requireGit(t)
	s := newTestScanner(t)
	ctx := context.Background()

	if _, err := ScanGitHistory(ctx, filepath.Join(t.TempDir(), "missing"), s); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("missing dir: %v", err)
	}
	plain := t.TempDir()
	if _, err := ScanGitHistory(ctx, plain, s); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("plain dir: %v", err)
	}
	if _, err := ScanGitHistory(ctx, plain, nil); err == nil {
		t.Error("nil scanner accepted")
	}

	// A directory inside a repository is not the repository.
	r := newTestRepo(t)
	r.WriteFile("sub/a.txt", "x\n")
	r.Commit("c")
	if _, err := ScanGitHistory(ctx, filepath.Join(r.Dir, "sub"), s); err == nil {
		t.Error("subdirectory of a repository scanned as the repository")
	}

	// An empty repository has no history and no findings.
	empty := newTestRepo(t)
	if got, err := ScanGitHistory(ctx, empty.Dir, s); err != nil || len(got) != 0 {
		t.Errorf("empty repo: %v, %v", got, err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ScanGitHistory(cancelled, r.Dir, s); err == nil {
		t.Error("cancelled context: no error")
	}
}

func TestParseLogPatch(t *testing.T) {
	log := "\x00c1\n" +
		"\n" +
		"diff --git a/x.txt b/x.txt\n" +
		"new file mode 100644\n" +
		"index 0000000..1111111\n" +
		"--- /dev/null\n" +
		"+++ b/x.txt\n" +
		"@@ -0,0 +1,4 @@\n" +
		"+one\n" +
		"++++ b/looks-like-a-header\n" +
		"+diff --git a/y b/y\n" +
		"+@@ -1 +1 @@\n" +
		"diff --git \"a/odd\\tname\" \"b/odd\\tname\"\n" +
		"--- \"a/odd\\tname\"\n" +
		"+++ \"b/odd\\tname\"\n" +
		"@@ -3,2 +3 @@ func f() {\n" +
		"-gone\n" +
		"-gone too\n" +
		"+kept\n" +
		"@@ -9 +8,0 @@\n" +
		"-deleted only\n" +
		"@@ -20,0 +20,2 @@\n" +
		"+last\n" +
		"+no newline\n" +
		"\\ No newline at end of file\n" +
		"\x00c2\n" +
		"diff --git a/z b/z\n" +
		"deleted file mode 100644\n" +
		"--- a/z\n" +
		"+++ /dev/null\n" +
		"@@ -1 +0,0 @@\n" +
		"-z\n" +
		"diff --git a/bad b/bad\n" +
		"+++ b/bad\n" +
		"@@ -1,5 +1,5 @@\n" +
		"+short hunk\n" +
		"\x00c3\n" +
		"diff --git a/w b/w\n" +
		"+++ b/w\n" +
		"@@ -0,0 +1 @@\n" +
		"+w"
	var got []addedBlock
	if err := parseLogPatch(strings.NewReader(log), func(b addedBlock) { got = append(got, b) }); err != nil {
		t.Fatal(err)
	}
	want := []addedBlock{
		{0, "c1", "x.txt", 1, "one\n+++ b/looks-like-a-header\ndiff --git a/y b/y\n@@ -1 +1 @@\n"},
		{0, "c1", "odd\tname", 3, "kept\n"},
		{0, "c1", "odd\tname", 20, "last\nno newline\n"},
		{1, "c2", "bad", 1, "short hunk\n"},
		{2, "c3", "w", 1, "w\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d blocks: %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestHunkHeader(t *testing.T) {
	for _, tt := range []struct {
		in                   string
		oldN, newN, newStart int
		ok                   bool
	}{
		{"@@ -1,2 +3,4 @@", 2, 4, 3, true},
		{"@@ -1 +1 @@ ctx", 1, 1, 1, true},
		{"@@ -0,0 +1 @@", 0, 1, 1, true},
		{"@@ -x +1 @@", 0, 0, 0, false},
		{"@@ -1,-2 +1 @@", 0, 0, 0, false},
		{"@@", 0, 0, 0, false},
	} {
		o, n, s, ok := hunkHeader(tt.in)
		if ok != tt.ok || (ok && (o != tt.oldN || n != tt.newN || s != tt.newStart)) {
			t.Errorf("hunkHeader(%q) = %d,%d,%d,%v", tt.in, o, n, s, ok)
		}
	}
}

// TestScanGitHistoryLarge checks the streaming parser and worker pool on a
// history of a few hundred commits and reports the rate.
func TestScanGitHistoryLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	r := newTestRepo(t)
	// git fast-import builds the history in one process.
	var stream strings.Builder
	data := func(s string) { fmt.Fprintf(&stream, "data %d\n%s\n", len(s), s) }
	for i := range 300 {
		fmt.Fprintf(&stream, "commit refs/heads/main\nmark :%d\ncommitter t <t@example.com> %d +0000\n", i+1, 1700000000+i)
		data("c")
		if i > 0 {
			fmt.Fprintf(&stream, "from :%d\n", i)
		}
		stream.WriteString("M 100644 inline f.txt\n")
		data(strings.Repeat("line of ordinary text with no secret in it\n", 20) + strings.Repeat("x", i) + "\n")
		if i == 150 {
			stream.WriteString("M 100644 inline g.txt\n")
			data("k=" + fakeAWSKey() + "\n")
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = r.Dir
	cmd.Stdin = strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	s := newTestScanner(t)
	start := time.Now()
	got, err := ScanGitHistory(context.Background(), r.Dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != "g.txt" {
		t.Fatalf("got %+v", got)
	}
	t.Logf("300 commits scanned in %v", time.Since(start))
}
