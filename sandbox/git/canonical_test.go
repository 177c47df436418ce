package git

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// canonicalFixture is a base and a head that change text, a binary file,
// a mode, a symlink and a deletion, with a name git quotes.
func canonicalFixture(t *testing.T) (f *fixture, base, head string) {
	f = newFixture(t)
	f.write("a.go", "package a\n\nfunc A() int {\n\treturn 1\n}\n")
	f.write("gone.txt", "bye\n")
	f.write("bin.dat", "\x00\x01\x02base")
	f.writeMode("run.sh", "#!/bin/sh\necho hi\n", 0o644)
	base = f.commit("base")
	f.write("a.go", "package a\n\nfunc A() int {\n\treturn 2\n}\n")
	f.remove("gone.txt")
	f.write("bin.dat", "\x00\x01\x02head\xff")
	f.writeMode("run.sh", "#!/bin/sh\necho hi\n", 0o755)
	f.symlink("a.go", "link")
	f.write("dir/naïve\tname.txt", "quoted\n")
	head = f.commit("head")
	return f, base, head
}

func TestCanonicalDiffApplies(t *testing.T) {
	f, base, head := canonicalFixture(t)
	ctx := context.Background()
	diff, err := f.open().CanonicalDiff(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GIT binary patch", "index " + strings.TrimSpace(f.git("rev-parse", base+":a.go")), "\"b/dir/na\\303\\257ve\\tname.txt\"", "new mode 100755", "deleted file mode"} {
		if !bytes.Contains(diff, []byte(want)) {
			t.Errorf("canonical diff lacks %q:\n%s", want, diff)
		}
	}
	if bytes.Contains(diff, []byte("\x1b[")) {
		t.Errorf("canonical diff has colour")
	}
	// The diff applied to the base gives the head's tree exactly.
	f.git("checkout", "-q", base)
	p := filepath.Join(t.TempDir(), "change.diff")
	if err := os.WriteFile(p, diff, 0o644); err != nil {
		t.Fatal(err)
	}
	f.git("apply", "--index", "--binary", p)
	got := strings.TrimSpace(f.git("write-tree"))
	want := strings.TrimSpace(f.git("rev-parse", head+"^{tree}"))
	if got != want {
		t.Fatalf("base + canonical diff = tree %s, head's tree is %s", got, want)
	}
}

// TestCanonicalDiffIgnoresSettings: nothing the repository configures or
// its work tree holds changes the bytes, so the digest names the change.
func TestCanonicalDiffIgnoresSettings(t *testing.T) {
	f, base, head := canonicalFixture(t)
	ctx := context.Background()
	first, err := f.open().CanonicalDiff(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"diff.noprefix", "true"}, {"diff.mnemonicPrefix", "true"}, {"diff.context", "9"},
		{"diff.algorithm", "patience"}, {"diff.interHunkContext", "20"}, {"core.quotePath", "false"},
		{"diff.orderFile", "order"}, {"diff.renames", "copies"}, {"color.diff", "always"},
		{"diff.external", "false"}, {"core.abbrev", "7"}, {"diff.relative", "true"},
		{"diff.suppressBlankEmpty", "true"}, {"diff.indentHeuristic", "false"},
	} {
		f.git("config", kv[0], kv[1])
	}
	f.write("order", "z*\n")
	f.write(".gitattributes", "*.go -diff\n*.dat diff\n* diff=evil\n")
	f.git("config", "diff.evil.textconv", "sh -c 'echo pwned'")
	if err := os.MkdirAll(filepath.Join(f.dir, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	again, err := f.open().CanonicalDiff(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Fatalf("settings changed the canonical diff:\n--- before\n%s\n--- after\n%s", first, again)
	}
	if Digest(first) != Digest(again) || !strings.HasPrefix(Digest(first), DigestPrefix) || len(Digest(first)) != len(DigestPrefix)+64 {
		t.Fatalf("digest %q", Digest(first))
	}
}

func TestCanonicalDiffRefusesBadRevisions(t *testing.T) {
	f, base, _ := canonicalFixture(t)
	r := f.open()
	for _, rev := range []string{"", "--output=/tmp/x", "nosuch"} {
		if _, err := r.CanonicalDiff(context.Background(), base, rev); err == nil {
			t.Errorf("CanonicalDiff(%q) = nil error", rev)
		}
	}
}

func TestValidDigest(t *testing.T) {
	good := Digest([]byte("x"))
	for d, want := range map[string]bool{
		good: true, strings.ToUpper(good[:7]) + good[7:]: false, DigestPrefix + strings.ToUpper(good[7:]): false,
		good[:len(good)-1]: false, good + "0": false, "sha1:" + good[7:]: false, good[7:]: false, "": false,
		DigestPrefix + strings.Repeat("g", 64): false,
	} {
		if ValidDigest(d) != want {
			t.Errorf("ValidDigest(%q) = %v, want %v", d, !want, want)
		}
	}
}
