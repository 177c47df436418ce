package gitchange

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// repo is a scratch repository driven by plain git.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	testenv.Git(t)
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	out, err := testrepo.Command(r.dir, args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (r *repo) write(p, content string, mode os.FileMode) {
	r.t.Helper()
	full := filepath.Join(r.dir, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	_ = os.Remove(full)
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) symlink(target, p string) {
	r.t.Helper()
	full := filepath.Join(r.dir, p)
	_ = os.Remove(full)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) remove(p string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.dir, p)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(r.git("rev-parse", "HEAD"))
}

func (r *repo) open() *git.Repo {
	r.t.Helper()
	g, err := git.Open(context.Background(), r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return g
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// summary is a FileChange without its contents, for comparison.
type summary struct {
	Status             verify.Status
	BaseMode, HeadMode string
	Binary             bool
	Changed            []verify.LineRange
}

func summarize(c *verify.Change) (map[string]summary, []string) {
	got := map[string]summary{}
	var order []string
	for _, f := range c.Files {
		got[f.Path] = summary{f.Status, f.BaseMode, f.HeadMode, f.Binary, f.Changed}
		order = append(order, f.Path)
	}
	return got, order
}

// twoCommits builds a base and a head commit that differ in every way a
// file can.
func twoCommits(t *testing.T) (r *repo, base, head string) {
	r = newRepo(t)
	r.write("calc.go", numbered(20), 0o644)
	r.write("gone.txt", "bye\n", 0o644)
	r.write("data.bin", "\x00\x01\x02", 0o644)
	r.write("run.sh", "#!/bin/sh\n", 0o644)
	r.write("becomes_link.txt", "file\n", 0o644)
	r.write("sp ace/ünï côdé.txt", "one\n", 0o644)
	r.symlink("calc.go", "link")
	r.symlink("sp ace", "spacelink")
	base = r.commit("base")

	lines := strings.Split(numbered(20), "\n")
	lines[2] = "line three changed"
	lines[9] = "line ten changed"
	lines = append(lines[:10], append([]string{"inserted"}, lines[10:]...)...)
	lines = append(lines[:15], lines[16:]...) // delete a line: no head range
	r.write("calc.go", strings.Join(lines, "\n"), 0o644)
	r.remove("gone.txt")
	r.write("calc_test.go", "package calc\n\nfunc TestX(t *testing.T) {}\n", 0o644)
	r.write("data.bin", "\x00\x01\x02\x03", 0o644)
	r.write("run.sh", "#!/bin/sh\n", 0o755)
	r.symlink("gone.txt", "becomes_link.txt")
	r.write("sp ace/ünï côdé.txt", "one\ntwo\n", 0o644)
	r.symlink("sp ace", "link")
	r.git("add", "-A")
	r.git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("4", 40)+",vendor/sub")
	r.git("commit", "-q", "-m", "head")
	head = strings.TrimSpace(r.git("rev-parse", "HEAD"))
	return r, base, head
}

func TestLoadCommittedHead(t *testing.T) {
	ctx := context.Background()
	r, base, head := twoCommits(t)
	c, err := Load(ctx, r.open(), "HEAD~1", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Workspace.Close()
	if c.Base != base || c.Head != head {
		t.Errorf("Base, Head = %s, %s; want %s, %s", c.Base, c.Head, base, head)
	}
	got, order := summarize(c)
	want := map[string]summary{
		"becomes_link.txt":    {verify.Modified, "100644", "120000", false, nil},
		"calc.go":             {verify.Modified, "100644", "100644", false, []verify.LineRange{{Start: 3, End: 3}, {Start: 10, End: 11}}},
		"calc_test.go":        {verify.Added, "", "100644", false, []verify.LineRange{{Start: 1, End: 3}}},
		"data.bin":            {verify.Modified, "100644", "100644", true, nil},
		"gone.txt":            {verify.Deleted, "100644", "", false, nil},
		"link":                {verify.Modified, "120000", "120000", false, nil},
		"run.sh":              {verify.Modified, "100644", "100755", false, nil},
		"sp ace/ünï côdé.txt": {verify.Modified, "100644", "100644", false, []verify.LineRange{{Start: 2, End: 2}}},
		"vendor/sub":          {verify.Added, "", "160000", false, nil},
	}
	if !reflect.DeepEqual(got, want) {
		for p := range want {
			if !reflect.DeepEqual(got[p], want[p]) {
				t.Errorf("%s: got %+v, want %+v", p, got[p], want[p])
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("unexpected file %s", p)
			}
		}
	}
	wantOrder := []string{"becomes_link.txt", "calc.go", "calc_test.go", "data.bin", "gone.txt", "link", "run.sh", "sp ace/ünï côdé.txt", "vendor/sub"}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("order = %v, want sorted %v", order, wantOrder)
	}

	file := func(p string) verify.FileChange {
		f, ok := c.File(p)
		if !ok {
			t.Fatalf("no %s", p)
		}
		return f
	}
	if f := file("gone.txt"); string(f.Base) != "bye\n" || f.Head != nil {
		t.Errorf("deleted: Base %q Head %q", f.Base, f.Head)
	}
	if f := file("calc_test.go"); f.Base != nil || !strings.Contains(string(f.Head), "TestX") {
		t.Errorf("added: Base %q Head %q", f.Base, f.Head)
	}
	if f := file("link"); string(f.Base) != "calc.go" || string(f.Head) != "sp ace" {
		t.Errorf("link: Base %q Head %q; want the targets", f.Base, f.Head)
	}
	if f := file("becomes_link.txt"); string(f.Base) != "file\n" || string(f.Head) != "gone.txt" {
		t.Errorf("type change: Base %q Head %q", f.Base, f.Head)
	}
	if f := file("data.bin"); string(f.Head) != "\x00\x01\x02\x03" {
		t.Errorf("binary head = %q", f.Head)
	}
	if f := file("vendor/sub"); f.Base != nil || f.Head != nil {
		t.Errorf("submodule has content: %q %q", f.Base, f.Head)
	}
	if f := file("run.sh"); string(f.Base) != "#!/bin/sh\n" || string(f.Head) != "#!/bin/sh\n" {
		t.Errorf("mode change: %q %q", f.Base, f.Head)
	}
}

func TestLoadWorkingTree(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.write(".gitignore", "*.log\n", 0o644)
	r.write("a.go", "package a\n", 0o644)
	r.write("b.go", "package a\n", 0o644)
	base := r.commit("base")
	r.write("a.go", "package a\n\nfunc A() {}\n", 0o644)
	r.remove("b.go")
	r.write("new file.go", "package a\n", 0o644)
	r.write("out.log", "ignored\n", 0o644)
	index, _ := os.ReadFile(filepath.Join(r.dir, ".git", "index"))

	c, err := Load(ctx, r.open(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Workspace.Close()
	if c.Base != base {
		t.Errorf("Base = %s, want HEAD on main %s", c.Base, base)
	}
	if typ := strings.TrimSpace(r.git("cat-file", "-t", c.Head)); typ != "tree" {
		t.Errorf("Head %s is a %s, want the working tree's tree", c.Head, typ)
	}
	got, _ := summarize(c)
	want := map[string]summary{
		"a.go":        {verify.Modified, "100644", "100644", false, []verify.LineRange{{Start: 2, End: 3}}},
		"b.go":        {verify.Deleted, "100644", "", false, nil},
		"new file.go": {verify.Added, "", "100644", false, []verify.LineRange{{Start: 1, End: 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files = %+v\nwant %+v", got, want)
	}
	if after, _ := os.ReadFile(filepath.Join(r.dir, ".git", "index")); string(after) != string(index) {
		t.Errorf("Load changed the user's index")
	}
	if st := r.git("status", "--porcelain"); !strings.Contains(st, " M a.go") || !strings.Contains(st, " D b.go") || !strings.Contains(st, "?? \"new file.go\"") {
		t.Errorf("the user's status changed:\n%s", st)
	}
}

func TestLoadDefaultBaseAndErrors(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.write("a", "1\n", 0o644)
	fork := r.commit("base")
	r.git("checkout", "-q", "-b", "feature")
	r.write("a", "2\n", 0o644)
	r.commit("feature")
	g := r.open()
	c, err := Load(ctx, g, "", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != fork || len(c.Files) != 1 {
		t.Errorf("default base = %s with %d files; want the fork point %s and 1 file", c.Base, len(c.Files), fork)
	}
	c.Workspace.Close()

	if _, err := Load(ctx, g, "nosuch", ""); err == nil || !strings.Contains(err.Error(), `bad revision "nosuch"`) {
		t.Errorf("bad base: err = %v", err)
	}
	if _, err := Load(ctx, g, "HEAD", "nosuch"); err == nil || !strings.Contains(err.Error(), `bad revision "nosuch"`) {
		t.Errorf("bad head: err = %v", err)
	}
	r.git("branch", "-q", "-m", "main", "trunk")
	if _, err := Load(ctx, g, "", ""); !errors.Is(err, git.ErrNoBase) {
		t.Errorf("no base: err = %v, want git.ErrNoBase", err)
	}
	if _, err := Load(ctx, nil, "", ""); err == nil {
		t.Errorf("nil repository accepted")
	}
}

// listing maps every path below dir to its type and content.
func listing(t *testing.T, dir string) map[string]string {
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
			got[rel] = "-> " + target
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

func TestMaterialize(t *testing.T) {
	ctx := context.Background()
	r, _, _ := twoCommits(t)
	c, err := Load(ctx, r.open(), "HEAD~1", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Workspace

	headDir, err := ws.Materialize(ctx, verify.HeadSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Snapshots live at the repository's stable path of their side (see
	// stable_test.go), in the scratch root.
	if want := stableDir(t, r, "head-0"); headDir != want {
		t.Errorf("snapshot at %s, want %s", headDir, want)
	}
	head := listing(t, headDir)
	for p, want := range map[string]string{
		"calc_test.go":        "-rw-r--r-- package calc\n\nfunc TestX(t *testing.T) {}\n",
		"run.sh":              "-rwxr-xr-x #!/bin/sh\n",
		"link":                "-> sp ace",
		"becomes_link.txt":    "-> gone.txt",
		"sp ace/ünï côdé.txt": "-rw-r--r-- one\ntwo\n",
		"vendor/sub":          "dir",
	} {
		if head[p] != want {
			t.Errorf("head %s = %q, want %q", p, head[p], want)
		}
	}
	if _, ok := head["gone.txt"]; ok {
		t.Errorf("head has the deleted file")
	}

	// The base with the head's test file, a deletion, an executable, a
	// link, and a file below what the base has as a link.
	testFile, _ := c.File("calc_test.go")
	overlay := []verify.FileChange{
		testFile,
		{Path: "calc.go", Status: verify.Deleted, BaseMode: "100644"},
		{Path: "tools/gen.sh", Head: []byte("#!/bin/sh\n"), HeadMode: "100755"},
		{Path: "alias", Head: []byte("../../../etc/passwd"), HeadMode: "120000"},
		{Path: "link/inner.txt", Head: []byte("not through the link\n"), HeadMode: "100644"},
		{Path: "never/there.txt", Status: verify.Deleted},
		{Path: "link/calc.go", Status: verify.Deleted},
		{Path: "spacelink/ünï côdé.txt", Status: verify.Deleted}, // must not follow the link
	}
	baseDir, err := ws.Materialize(ctx, verify.BaseSide, overlay)
	if err != nil {
		t.Fatal(err)
	}
	base := listing(t, baseDir)
	want := map[string]string{
		"gone.txt":            "-rw-r--r-- bye\n",
		"data.bin":            "-rw-r--r-- \x00\x01\x02",
		"run.sh":              "-rw-r--r-- #!/bin/sh\n",
		"becomes_link.txt":    "-rw-r--r-- file\n",
		"sp ace":              "dir",
		"sp ace/ünï côdé.txt": "-rw-r--r-- one\n",
		"calc_test.go":        "-rw-r--r-- package calc\n\nfunc TestX(t *testing.T) {}\n",
		"tools":               "dir",
		"tools/gen.sh":        "-rwxr-xr-x #!/bin/sh\n",
		"alias":               "-> ../../../etc/passwd",
		"link":                "dir",
		"link/inner.txt":      "-rw-r--r-- not through the link\n",
		"spacelink":           "-> sp ace",
	}
	if !reflect.DeepEqual(base, want) {
		t.Errorf("base with overlay:\n got %q\nwant %q", base, want)
	}
	// The link's old target was not touched.
	if b, err := os.ReadFile(filepath.Join(baseDir, "calc.go")); err == nil {
		t.Errorf("calc.go still there: %q", b)
	}

	// Unsafe overlays are refused before anything is made.
	for _, bad := range []string{"../escape.txt", "/abs.txt", ".git/config", "a/../../b"} {
		if _, err := ws.Materialize(ctx, verify.BaseSide, []verify.FileChange{{Path: bad, Head: []byte("x")}}); err == nil {
			t.Errorf("overlay %q accepted", bad)
		}
	}
	if _, err := ws.Materialize(ctx, "middle", nil); err == nil {
		t.Errorf("unknown side accepted")
	}

	// A read-only directory left behind by a test does not stop Close.
	ro := filepath.Join(headDir, "readonly")
	if err := os.MkdirAll(filepath.Join(ro, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "d", "f"), []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{headDir, baseDir} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s survived Close: %v", d, err)
		}
	}
	if err := ws.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ws.Materialize(ctx, verify.HeadSide, nil); err == nil {
		t.Errorf("Materialize after Close succeeded")
	}
}

func TestMaterializeWorkingTreeHead(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.write("a.txt", "committed\n", 0o644)
	r.commit("base")
	r.write("a.txt", "edited, not committed\n", 0o644)
	r.write("fresh.txt", "untracked\n", 0o755)
	c, err := Load(ctx, r.open(), "HEAD", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Workspace.Close()
	dir, err := c.Workspace.Materialize(ctx, verify.HeadSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := listing(t, dir)
	want := map[string]string{"a.txt": "-rw-r--r-- edited, not committed\n", "fresh.txt": "-rwxr-xr-x untracked\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("head snapshot = %q, want %q", got, want)
	}
}

func TestReadBase(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.write(".bcode/config.toml", "[gate]\nflake_runs = 3\n", 0o644)
	r.commit("base")
	r.write(".bcode/config.toml", "[gate]\nflake_runs = 1\n", 0o644)
	r.write("only-in-head.txt", "x\n", 0o644)
	r.commit("head weakens config")
	c, err := Load(ctx, r.open(), "HEAD~1", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Workspace.Close()
	b, err := c.Workspace.ReadBase(ctx, ".bcode/config.toml")
	if err != nil || string(b) != "[gate]\nflake_runs = 3\n" {
		t.Errorf("ReadBase = %q, %v; want the base's config", b, err)
	}
	if _, err := c.Workspace.ReadBase(ctx, "only-in-head.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file only in head: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := c.Workspace.ReadBase(ctx, "no/such/file"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := c.Workspace.ReadBase(ctx, "../outside"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("path outside: err = %v, want a path error", err)
	}
}
