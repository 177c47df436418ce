package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseUnifiedDiff(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []FileDiff
	}{
		{"empty", "", nil},
		{"modified", `diff --git a/x.go b/x.go
index 1111111..2222222 100644
--- a/x.go
+++ b/x.go
@@ -1,3 +1,4 @@ package x
 a
-b
+B
+C
 c
@@ -10 +11,0 @@
-gone
`, []FileDiff{{OldPath: "x.go", NewPath: "x.go", Hunks: []Hunk{{1, 3, 1, 4}, {10, 1, 11, 0}}}}},
		{"added and deleted", `diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+one
+two
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 1111111..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-one
`, []FileDiff{
			{OldPath: "", NewPath: "new.txt", Hunks: []Hunk{{0, 0, 1, 2}}},
			{OldPath: "old.txt", NewPath: "", Hunks: []Hunk{{1, 1, 0, 0}}},
		}},
		{"quoted paths", `diff --git "a/t\303\251st\tx.go" "b/t\303\251st\tx.go"
index 1..2 100644
--- "a/t\303\251st\tx.go"
+++ "b/t\303\251st\tx.go"
@@ -1 +1 @@
-a
+b
`, []FileDiff{{OldPath: "tést\tx.go", NewPath: "tést\tx.go", Hunks: []Hunk{{1, 1, 1, 1}}}}},
		{"spaces with git's trailing tab", "diff --git a/my file.go b/my file.go\nindex 1..2 100644\n--- a/my file.go\t\n+++ b/my file.go\t\n@@ -2 +2 @@\n-a\n+b\n",
			[]FileDiff{{OldPath: "my file.go", NewPath: "my file.go", Hunks: []Hunk{{2, 1, 2, 1}}}}},
		{"binary, names from the header", `diff --git a/img one.png b/img one.png
new file mode 100644
index 0000000..1111111
Binary files /dev/null and b/img one.png differ
`, []FileDiff{{OldPath: "", NewPath: "img one.png", Binary: true}}},
		{"mode change only", `diff --git a/run me.sh b/run me.sh
old mode 100644
new mode 100755
`, []FileDiff{{OldPath: "run me.sh", NewPath: "run me.sh"}}},
		{"empty new file", `diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
`, []FileDiff{{OldPath: "", NewPath: "empty"}}},
		{"no newline markers", `diff --git a/x b/x
--- a/x
+++ b/x
@@ -1 +1 @@
-a
\ No newline at end of file
+b
\ No newline at end of file
`, []FileDiff{{OldPath: "x", NewPath: "x", Hunks: []Hunk{{1, 1, 1, 1}}}}},
		{"removed lines that look like headers", `diff --git a/x b/x
--- a/x
+++ b/x
@@ -1,3 +1,1 @@
--- a/fake
-++ b/fake
 keep
diff --git a/y b/y
--- a/y
+++ b/y
@@ -1 +1 @@
-diff --git a/z b/z
+@@ -1 +1 @@
`, []FileDiff{
			{OldPath: "x", NewPath: "x", Hunks: []Hunk{{1, 3, 1, 1}}},
			{OldPath: "y", NewPath: "y", Hunks: []Hunk{{1, 1, 1, 1}}},
		}},
		{"rename", `diff --git a/old name.go b/new name.go
similarity index 90%
rename from old name.go
rename to new name.go
index 1..2 100644
`, []FileDiff{{OldPath: "old name.go", NewPath: "new name.go"}}},
		{"plain diff -u", "--- x.orig\t2024-01-01 00:00:00.000000000 +0000\n+++ x\t2024-01-02 00:00:00.000000000 +0000\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n--- y\n+++ y\n@@ -5 +5 @@\n-1\n+2\n",
			[]FileDiff{{OldPath: "x.orig", NewPath: "x", Hunks: []Hunk{{1, 2, 1, 2}}}, {OldPath: "y", NewPath: "y", Hunks: []Hunk{{5, 1, 5, 1}}}}},
		{"commit text before the diff", "commit abc\nAuthor: x\n\n    msg\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b",
			[]FileDiff{{OldPath: "x", NewPath: "x", Hunks: []Hunk{{1, 1, 1, 1}}}}},
		{"context line with its space stripped", "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n",
			[]FileDiff{{OldPath: "x", NewPath: "x", Hunks: []Hunk{{1, 3, 1, 3}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUnifiedDiff(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseUnifiedDiffErrors(t *testing.T) {
	for name, in := range map[string]string{
		"hunk outside a file":  "@@ -1 +1 @@\n-a\n+b\n",
		"bad header":           "--- a/x\n+++ b/x\n@@ -x +1 @@\n",
		"missing plus range":   "--- a/x\n+++ b/x\n@@ -1 @@\n",
		"truncated hunk":       "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
		"too many removals":    "--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n-b\n+c\n",
		"garbage in hunk":      "--- a/x\n+++ b/x\n@@ -1 +1 @@\n*a\n+b\n",
		"huge count":           "--- a/x\n+++ b/x\n@@ -1,99999999999 +1 @@\n",
		"combined diff":        "diff --cc x\n--- a/x\n+++ b/x\n@@@ -1 -1 +1 @@@\n",
		"bad quoted name":      "--- \"a/x\\q\"\n+++ b/x\n",
		"unterminated quote":   "--- \"a/x\n+++ b/x\n",
		"bad quoted rename":    "diff --git a/x b/y\nrename from \"x\n",
		"negative looking num": "--- a/x\n+++ b/x\n@@ --1 +1 @@\n",
	} {
		if files, err := ParseUnifiedDiff(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted, got %+v", name, files)
		} else if !strings.Contains(err.Error(), "diff line") {
			t.Errorf("%s: error %q does not name the line", name, err)
		}
	}
}

// corpusSeed reads one file of the committed fuzz corpus.
func corpusSeed(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzParseUnifiedDiff", name))
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	lit = strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")")
	s, err := strconv.Unquote(lit)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func TestParseRealGitOutput(t *testing.T) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParseUnifiedDiff", "git-*"))
	if len(seeds) < 5 {
		t.Fatalf("seed corpus missing: %v", seeds)
	}
	for _, s := range seeds {
		if _, err := ParseUnifiedDiff(strings.NewReader(corpusSeed(t, filepath.Base(s)))); err != nil {
			t.Errorf("%s: %v", filepath.Base(s), err)
		}
	}
	got, err := ParseUnifiedDiff(strings.NewReader(corpusSeed(t, "git-u0")))
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]string{}
	for _, fd := range got {
		summary[fd.OldPath+" -> "+fd.NewPath] = fmt.Sprint(fd.Hunks, fd.Binary)
	}
	want := map[string]string{
		"b.bin -> b.bin":                 "[] true",
		" -> link":                       "[{0 0 1 1}] false",
		"mode.sh -> mode.sh":             "[] false",
		" -> new.txt":                    "[{0 0 1 1}] false",
		"nonl.txt -> nonl.txt":           "[{1 1 1 1}] false",
		"nums.txt -> nums.txt":           "[{7 1 7 1} {20 1 20 2}] false",
		"old.txt -> ":                    "[{1 1 0 0}] false",
		"renamed-from.txt -> ":           "[{1 1 0 0}] false",
		" -> renamed-to.txt":             "[{0 0 1 1}] false",
		"sp ace.txt -> sp ace.txt":       "[{1 0 2 1}] false",
		"tëst\ttab.txt -> tëst\ttab.txt": "[{1 1 1 1}] false",
	}
	if !reflect.DeepEqual(summary, want) {
		t.Errorf("git -U0 output:\n got %q\nwant %q", summary, want)
	}
	renames, _ := ParseUnifiedDiff(strings.NewReader(corpusSeed(t, "git-renames")))
	found := false
	for _, fd := range renames {
		found = found || fd.OldPath == "renamed-from.txt" && fd.NewPath == "renamed-to.txt"
	}
	if !found {
		t.Errorf("rename not read: %+v", renames)
	}
}

func TestDiffHunks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	lines := func(n int, tag string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(tag)
			b.WriteString(strings.Repeat("x", i))
			b.WriteString("\n")
		}
		return b.String()
	}
	f.write("a.go", lines(20, "line"))
	f.write("gone.go", "bye\n")
	f.write("sp ace/ünï.go", "one\n")
	f.write("hidden_test.go", "package x\n")
	f.write("type", "file\n")
	base := f.commit("base")
	// Repository settings that would change what is counted.
	f.write(".gitattributes", "hidden_test.go -diff\n")
	f.git("config", "diff.interHunkContext", "50")
	f.git("config", "diff.noprefix", "true")
	f.git("config", "diff.mnemonicPrefix", "true")
	f.git("config", "diff.relative", "true")

	a := strings.Split(lines(20, "line"), "\n")
	a[2] = "changed 3"
	a[9] = "changed 10"
	a = append(a[:15], append([]string{"inserted a", "inserted b"}, a[15:]...)...)
	f.write("a.go", strings.Join(a, "\n"))
	f.remove("gone.go")
	f.write("sp ace/ünï.go", "one\ntwo\n")
	f.write("hidden_test.go", "package x\n\nfunc TestHidden() {}\n")
	f.remove("type")
	f.symlink("a.go", "type")
	head := f.commit("head")

	r := f.open()
	got, err := r.DiffHunks(ctx, base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Hunk{
		".gitattributes": {{0, 0, 1, 1}},
		"a.go":           {{3, 1, 3, 1}, {10, 1, 10, 1}, {15, 0, 16, 2}},
		"gone.go":        {{1, 1, 0, 0}},
		"sp ace/ünï.go":  {{1, 0, 2, 1}},
		"hidden_test.go": {{1, 0, 2, 2}},
		"type":           {{1, 1, 0, 0}, {0, 0, 1, 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DiffHunks:\n got %v\nwant %v", got, want)
	}

	only, err := r.DiffHunks(ctx, base, head, []string{"sp ace/ünï.go", "*.go"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(only, map[string][]Hunk{"sp ace/ünï.go": {{1, 0, 2, 1}}}) {
		t.Errorf("DiffHunks limited to paths (literally, no globs) = %v", only)
	}

	// More paths than a command line should carry: filtered after the diff.
	many := []string{"a.go"}
	for i := 0; i < pathspecLimit+5; i++ {
		many = append(many, filepath.Join("nope", strings.Repeat("p", 5), string(rune('a'+i%26)), "x"+strings.Repeat("y", i%7)))
	}
	filtered, err := r.DiffHunks(ctx, base, head, many)
	if err != nil || !reflect.DeepEqual(filtered, map[string][]Hunk{"a.go": want["a.go"]}) {
		t.Errorf("DiffHunks with %d paths = %v, %v", len(many), filtered, err)
	}
}

// FuzzParseUnifiedDiff feeds arbitrary text to the parser: it must return
// files or an error, never panic, and what it returns must be consistent.
// The seed corpus in testdata/fuzz/FuzzParseUnifiedDiff holds real git
// output (default context, -U0, renames, unquoted paths, binary patches,
// log -p, plain diff -u) and the tricky cases above.
func FuzzParseUnifiedDiff(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := ParseUnifiedDiff(strings.NewReader(string(data)))
		if err != nil {
			if files != nil {
				t.Errorf("files returned with an error")
			}
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, fd := range files {
			for _, h := range fd.Hunks {
				if h.OldStart < 0 || h.OldLines < 0 || h.NewStart < 0 || h.NewLines < 0 {
					t.Errorf("negative hunk %+v", h)
				}
				if h.OldLines > lines || h.NewLines > lines {
					t.Errorf("hunk %+v counts more lines than the input has (%d)", h, lines)
				}
			}
		}
		again, err := ParseUnifiedDiff(strings.NewReader(string(data)))
		if err != nil || !reflect.DeepEqual(again, files) {
			t.Errorf("second parse differs")
		}
	})
}
