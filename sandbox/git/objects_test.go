package git

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestDiffTree(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("mod.txt", "a\n")
	f.write("del.txt", "d\n")
	f.write("type", "file\n")
	f.write("exec.sh", "x\n")
	base := f.commit("base")
	f.write("mod.txt", "b\n")
	f.remove("del.txt")
	f.write("add dir/ñew.txt", "n\n")
	f.remove("type")
	f.symlink("mod.txt", "type")
	if err := os.Chmod(filepath.Join(f.dir, "exec.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := strings.Repeat("2", 40)
	f.git("add", "-A")
	f.git("update-index", "--add", "--cacheinfo", "160000,"+sub+",sub")
	f.git("commit", "-q", "-m", "head")
	head := strings.TrimSpace(f.git("rev-parse", "HEAD"))

	r := f.open()
	entries, err := r.DiffTree(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Path] = string(e.Status) + " " + e.OldMode + ">" + e.NewMode
		if e.Status == 'A' && e.OldBlob != r.nullID() || e.Status == 'D' && e.NewBlob != r.nullID() {
			t.Errorf("%s: absent side id is not the null id: %+v", e.Path, e)
		}
	}
	want := map[string]string{
		"mod.txt":         "M 100644>100644",
		"del.txt":         "D 100644>",
		"add dir/ñew.txt": "A >100644",
		"type":            "T 100644>120000",
		"exec.sh":         "M 100644>100755",
		"sub":             "A >160000",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DiffTree:\n got %v\nwant %v", got, want)
	}
	// Trees work as well as commits.
	baseTree := strings.TrimSpace(f.git("rev-parse", base+"^{tree}"))
	if again, err := r.DiffTree(ctx, baseTree, head); err != nil || len(again) != len(entries) {
		t.Errorf("DiffTree(tree, commit) = %d entries, %v", len(again), err)
	}
	if _, err := r.DiffTree(ctx, "--output=/tmp/x", head); err == nil {
		t.Errorf("an option passed as a revision was accepted")
	}
	if _, err := r.DiffTree(ctx, "nosuchrev", head); err == nil {
		t.Errorf("a bad revision was accepted")
	}
}

func TestReadBlobsAndShowFile(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("a.txt", "alpha\n")
	f.write("b.bin", "bin\x00ary")
	f.write("dir/c.txt", "")
	f.symlink("a.txt", "link")
	head := f.commit("base")
	r := f.open()

	ids := []string{}
	for _, p := range []string{"a.txt", "b.bin", "dir/c.txt", "a.txt"} {
		ids = append(ids, strings.TrimSpace(f.git("rev-parse", "HEAD:"+p)))
	}
	blobs, err := r.ReadBlobs(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 3 || string(blobs[ids[0]]) != "alpha\n" || string(blobs[ids[1]]) != "bin\x00ary" || blobs[ids[2]] == nil || len(blobs[ids[2]]) != 0 {
		t.Errorf("ReadBlobs = %q", blobs)
	}
	if _, err := r.ReadBlobs(ctx, []string{strings.Repeat("e", 40)}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing blob: err = %v", err)
	}
	tree := strings.TrimSpace(f.git("rev-parse", "HEAD^{tree}"))
	if _, err := r.ReadBlobs(ctx, []string{tree}); err == nil || !strings.Contains(err.Error(), "tree") {
		t.Errorf("a tree as a blob: err = %v", err)
	}
	if _, err := r.ReadBlobs(ctx, []string{"HEAD\nmain"}); err == nil {
		t.Errorf("a non-id reached cat-file")
	}

	for _, tc := range []struct{ rev, path, want string }{
		{head, "a.txt", "alpha\n"}, {"HEAD", "dir/c.txt", ""}, {tree, "link", "a.txt"},
	} {
		got, err := r.ShowFile(ctx, tc.rev, tc.path)
		if err != nil || string(got) != tc.want {
			t.Errorf("ShowFile(%s, %s) = %q, %v; want %q", tc.rev, tc.path, got, err, tc.want)
		}
	}
	if _, err := r.ShowFile(ctx, head, "nope.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := r.ShowFile(ctx, head, "dir/nope/deeper.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing nested file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := r.ShowFile(ctx, head, "dir"); err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a directory: err = %v", err)
	}
	for _, bad := range []string{"../a.txt", "/etc/passwd", "dir/../a.txt", ""} {
		if _, err := r.ShowFile(ctx, head, bad); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ShowFile(%q): err = %v, want a path error", bad, err)
		}
	}
	if _, err := r.ShowFile(ctx, "nosuch", "a.txt"); err == nil || !strings.Contains(err.Error(), `bad revision "nosuch"`) {
		t.Errorf("bad revision: err = %v", err)
	}
}

// dirListing maps every path below dir to its type and content.
func dirListing(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			got[rel] = "link " + target
		case fi.IsDir():
			got[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			got[rel] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestExport(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("a.txt", "alpha\n")
	f.writeMode("bin/run.sh", "#!/bin/sh\n", 0o755)
	f.write("sp ace/ünï.txt", "u\n")
	f.symlink("../../../../etc/passwd", "escape")
	f.symlink("/etc", "absolute")
	f.symlink("a.txt", "inside")
	f.git("add", "-A")
	f.git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("3", 40)+",vendor/sub")
	f.git("commit", "-q", "-m", "tree")

	parent := t.TempDir()
	dest := filepath.Join(parent, "export")
	old := syscall.Umask(0o077) // the umask must not decide modes
	defer syscall.Umask(old)
	if err := f.open().Export(ctx, "HEAD", dest); err != nil {
		t.Fatal(err)
	}
	got := dirListing(t, dest)
	want := map[string]string{
		"a.txt":          "-rw-r--r-- alpha\n",
		"bin":            "dir",
		"bin/run.sh":     "-rwxr-xr-x #!/bin/sh\n",
		"sp ace":         "dir",
		"sp ace/ünï.txt": "-rw-r--r-- u\n",
		"escape":         "link ../../../../etc/passwd",
		"absolute":       "link /etc",
		"inside":         "link a.txt",
		"vendor":         "dir",
		"vendor/sub":     "dir",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("export:\n got %q\nwant %q", got, want)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("export wrote next to its directory: %v", entries)
	}
	// Exporting over an existing export refuses to overwrite.
	if err := f.open().Export(ctx, "HEAD", dest); err == nil {
		t.Errorf("export into a non-empty directory overwrote files")
	}
}

// craftTree writes a tree object git itself would never create, one entry
// per name (a blob, or a subtree for names ending in "/").
func craftTree(t *testing.T, f *fixture, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	for name, id := range entries {
		mode := "100644"
		if strings.HasSuffix(name, "/") {
			mode, name = "40000", strings.TrimSuffix(name, "/")
		}
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString(mode + " " + name + "\x00")
		buf.Write(raw)
	}
	cmd := exec.Command("git", "hash-object", "-t", "tree", "-w", "--literally", "--stdin")
	cmd.Dir = f.dir
	cmd.Stdin = &buf
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crafting a tree: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestExportRefusesUnsafeTrees(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write("x", "x\n")
	f.commit("base")
	blob := strings.TrimSpace(f.git("rev-parse", "HEAD:x"))
	inner := craftTree(t, f, map[string]string{"evil": blob})
	r := f.open()
	for name, tree := range map[string]string{
		"dot-dot dir":      craftTree(t, f, map[string]string{"../": inner, "ok": blob}),
		"slashes in name":  craftTree(t, f, map[string]string{"../../evil": blob}),
		"absolute name":    craftTree(t, f, map[string]string{"/tmp/evil": blob}),
		".git dir":         craftTree(t, f, map[string]string{".git/": inner}),
		".GIT dir":         craftTree(t, f, map[string]string{"sub/": craftTree(t, f, map[string]string{".GIT/": inner})}),
		"dot name":         craftTree(t, f, map[string]string{"./": inner}),
		"empty-looking ok": craftTree(t, f, map[string]string{"fine": blob}),
	} {
		parent := t.TempDir()
		dest := filepath.Join(parent, "out")
		err := r.Export(ctx, tree, dest)
		if name == "empty-looking ok" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "unsafe path") {
			t.Errorf("%s: err = %v, want an unsafe path refusal", name, err)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Errorf("%s: something was written: %v", name, entries)
		}
	}
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"a", "a/b.go", "sp ace/ü", ".github/x", "a/.gitignore", "..a", "a..", ".gitx"} {
		if err := CheckPath(ok); err != nil {
			t.Errorf("CheckPath(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/a", "a//b", "a/", "./a", "a/./b", "..", "../a", "a/../b", ".git", "x/.Git/config", "a\x00b"} {
		if err := CheckPath(bad); err == nil {
			t.Errorf("CheckPath(%q) accepted", bad)
		}
	}
}
