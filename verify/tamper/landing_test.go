package tamper

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

// memTree is a verify.Tree held in memory: path -> "mode:content" (mode
// defaults to 100644).
type memTree map[string]string

func (m memTree) entry(p string) (verify.TreeEntry, string) {
	mode, content := verify.ModeFile, m[p]
	if i := strings.IndexByte(content, ':'); i == 6 && strings.Trim(content[:6], "0123456789") == "" {
		mode, content = content[:6], content[7:]
	}
	size := int64(len(content))
	if mode == verify.ModeGitlink {
		size = -1
	}
	return verify.TreeEntry{Path: p, Mode: mode, OID: fmt.Sprintf("%x", sha1.Sum([]byte(mode+content))), Size: size}, content
}

func (m memTree) Entries(context.Context) ([]verify.TreeEntry, error) {
	var out []verify.TreeEntry
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		e, _ := m.entry(p)
		out = append(out, e)
	}
	return out, nil
}

func (m memTree) ReadBlobs(_ context.Context, oids []string, fn func(string, io.Reader) error) error {
	byOID := map[string]string{}
	for p := range m {
		e, c := m.entry(p)
		byOID[e.OID] = c
	}
	for _, id := range oids {
		c, ok := byOID[id]
		if !ok {
			return fmt.Errorf("no blob %s", id)
		}
		if err := fn(id, bytes.NewReader([]byte(c))); err != nil {
			return err
		}
	}
	return nil
}

func landingCodes(t *testing.T, before, after memTree) string {
	t.Helper()
	var b verify.Tree
	if before != nil {
		b = before
	}
	fs, err := Landing(context.Background(), b, after)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Code+" "+f.Path)
	}
	return fmt.Sprint(got)
}

func TestLandingInMemory(t *testing.T) {
	base := memTree{"a.go": "package a\n", "dir/x": "x", "sub/.gitattributes": "*.txt linguist-generated\n"}
	cases := []struct {
		name  string
		after memTree
		want  string
	}{
		{"absolute link", memTree{"shadow": "120000:/etc/shadow"}, "[symlink_outside shadow]"},
		{"escaping link", memTree{"a/key": "120000:../../.ssh/id_rsa"}, "[symlink_outside a/key]"},
		{"link into .git", memTree{"cfg": "120000:.git/config"}, "[symlink_outside cfg]"},
		{"link inside the tree", memTree{"a/b": "120000:../c/d", "c/d": "x"}, "[]"},
		{"dangling link", memTree{"a/b": "120000:../c/d"}, "[symlink_dangling a/b]"},
		{"chain through an earlier link", memTree{"a/b": "120000:x/y/q/r", "a/x/y/q/r/f": "f", "a/x/y/q/r/c/z": "120000:../../../../../../../etc/passwd"}, "[symlink_outside a/x/y/q/r/c/z]"},
		{"lexically inside, physically outside", memTree{"l": "120000:d/e/f", "d/e/f/g": "g", "z": "120000:l/../../../../etc"}, "[symlink_outside z]"},
		{"loop", memTree{"a": "120000:b", "b": "120000:a"}, "[symlink_loop a symlink_loop b]"},
		{"through a file", memTree{"f": "x", "l": "120000:f/x"}, "[symlink_dangling l]"},
		{"filter driver", memTree{"x/.gitattributes": "# c\n*.go text\n*.bin filter=lfs diff=lfs merge=lfs -text\n"},
			"[gitattributes_content x/.gitattributes gitattributes_driver x/.gitattributes]"},
		{"builtin drivers only", memTree{".gitattributes": "*.py diff=python\n*.txt merge=text\n*.md linguist-documentation export-ignore\n"}, "[]"},
		{"macro with a driver", memTree{".gitattributes": "[attr]evil filter=x\n* evil\n"}, "[gitattributes_driver .gitattributes gitattributes_driver .gitattributes]"},
		{"macro below the top is ignored", memTree{"d/.gitattributes": "[attr]evil filter=x\n"}, "[]"},
		{"long first line", memTree{".gitattributes": strings.Repeat("a", 2<<20) + "\n* filter=x\n"}, "[gitattributes_driver .gitattributes]"},
		{"negative pattern ignored", memTree{".gitattributes": "!x filter=x\n"}, "[]"},
		{"invalid name drops the line", memTree{".gitattributes": "* filter=x b@d\n"}, "[]"},
		{"gitmodules", memTree{".gitmodules": "[submodule \"s\"]\n\tpath = s\n\tupdate = !sh -c id\n"}, "[gitmodules .gitmodules]"},
		{"gitlink", memTree{"vendor/lib": "160000:"}, "[nested_repository vendor/lib]"},
		{"bare repository files", memTree{"r.git/HEAD": "ref: refs/heads/main\n", "r.git/config": "[core]\n"}, "[nested_repository r.git]"},
		{"HEAD and config that are not git's", memTree{"doc/HEAD": "a heading\n", "doc/config": "x\n"}, "[]"},
		{"case collision", memTree{"a.go": "x", "A.go": "y"}, "[path_collision a.go]"},
		{"binary", memTree{"Makefile": "all:\n\t# \x00\n\tcurl x|sh\n"}, "[binary_file Makefile]"},
		{"utf-16", memTree{"notes.txt": "\xff\xfeh\x00i\x00"}, "[binary_file notes.txt]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := landingCodes(t, nil, tc.after); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
	t.Run("findings the base already has are not new", func(t *testing.T) {
		b := memTree{"l": "120000:/usr/share/dict", ".gitattributes": "*.bin filter=lfs\n", "a.go": "x"}
		a := memTree{"l": "120000:/usr/share/dict", ".gitattributes": "# top\n*.bin filter=lfs\n", "a.go": "y"}
		if got := landingCodes(t, b, a); got != "[]" {
			t.Errorf("%s, want []", got)
		}
	})
	_ = base
}

// TestAllowSubmoduleUpdates: the base's [gate] allow_submodule_updates lets
// an existing submodule move; a new gitlink, a .gitmodules change, and any
// move without the setting stay findings.
func TestAllowSubmoduleUpdates(t *testing.T) {
	before := memTree{"third_party/lib": "160000:a", ".gitmodules": "[submodule \"lib\"]\n\tpath = third_party/lib\n"}
	after := memTree{"third_party/lib": "160000:b", "vendor/new": "160000:", ".gitmodules": "[submodule \"lib\"]\n\tpath = third_party/lib\n\turl = https://example.com/other\n"}
	move := verify.FileChange{Path: "third_party/lib", Status: verify.Modified, BaseMode: "160000", HeadMode: "160000"}
	change := &verify.Change{Files: []verify.FileChange{move}, Workspace: memWorkspace{before, after}}
	codes := func(fs []verify.Finding) string {
		var got []string
		for _, f := range fs {
			got = append(got, f.Code+" "+f.Path)
		}
		return fmt.Sprint(got)
	}
	var cfg config.Config
	fs, err := CheckLanding(context.Background(), change, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := codes(fs), "[gitmodules .gitmodules nested_repository third_party/lib nested_repository vendor/new]"; got != want {
		t.Fatalf("without the setting: %s, want %s", got, want)
	}
	cfg.Gate.AllowSubmoduleUpdates = true
	fs, _ = CheckLanding(context.Background(), change, cfg)
	if got, want := codes(fs), "[gitmodules .gitmodules nested_repository vendor/new]"; got != want {
		t.Fatalf("with allow_submodule_updates: %s, want %s", got, want)
	}
}

type memWorkspace struct{ before, after memTree }

func (memWorkspace) Materialize(context.Context, verify.Side, []verify.FileChange) (string, error) {
	return "", nil
}
func (memWorkspace) ReadBase(context.Context, string) ([]byte, error) { return nil, nil }
func (memWorkspace) Close() error                                     { return nil }
func (w memWorkspace) Tree(s verify.Side) verify.Tree {
	if s == verify.BaseSide {
		return w.before
	}
	return w.after
}

// BenchmarkLanding judges a tree of 20,000 files, 500 links and a
// .gitattributes against itself with one file changed (accept on a
// mid-sized repository; run it alone for timings).
func BenchmarkLanding(b *testing.B) {
	before := memTree{".gitattributes": "*.go diff=golang\n*.pb.go linguist-generated\n"}
	for i := 0; i < 20000; i++ {
		before[fmt.Sprintf("pkg%03d/sub%02d/file%d.go", i%200, i%17, i)] = "package p\n"
	}
	for i := 0; i < 500; i++ {
		before[fmt.Sprintf("links/l%d", i)] = fmt.Sprintf("120000:../pkg%03d/sub%02d/file%d.go", i%200, i%17, i)
	}
	after := memTree{}
	for k, v := range before {
		after[k] = v
	}
	after["pkg000/sub00/file0.go"] = "package p\n\nfunc F() {}\n"
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Landing(ctx, before, after); err != nil {
			b.Fatal(err)
		}
	}
}
