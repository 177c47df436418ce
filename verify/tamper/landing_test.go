package tamper

import (
	"fmt"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

func TestLanding(t *testing.T) {
	file := func(p, mode, head string) verify.FileChange {
		return verify.FileChange{Path: p, Status: verify.Added, HeadMode: mode, Head: []byte(head)}
	}
	cases := []struct {
		name string
		f    []verify.FileChange
		want string // "code path" of each finding, in order
	}{
		{"absolute link", []verify.FileChange{file("shadow", "120000", "/etc/shadow")}, "[symlink_outside shadow]"},
		{"escaping link", []verify.FileChange{file("a/key", "120000", "../../.ssh/id_rsa")}, "[symlink_outside a/key]"},
		{"link into .git", []verify.FileChange{file("cfg", "120000", ".git/config")}, "[symlink_outside cfg]"},
		{"link inside the tree", []verify.FileChange{file("a/b", "120000", "../c/d")}, "[]"},
		{"filter driver", []verify.FileChange{file("x/.gitattributes", "100644", "# c\n*.go text\n*.bin filter=lfs diff=lfs merge=lfs -text\n")},
			"[gitattributes_driver x/.gitattributes gitattributes_driver x/.gitattributes gitattributes_driver x/.gitattributes]"},
		{"builtin drivers only", []verify.FileChange{file(".gitattributes", "100644", "*.py diff=python\n*.txt merge=union\n*.png binary\n")}, "[]"},
		{"macro with a driver", []verify.FileChange{file(".gitattributes", "100644", "[attr]evil filter=x\n* evil\n")}, "[gitattributes_driver .gitattributes]"},
		{"gitmodules", []verify.FileChange{file(".gitmodules", "100644", "[submodule \"s\"]\n\tpath = s\n\tupdate = !sh -c id\n")}, "[gitmodules .gitmodules]"},
		{"gitlink", []verify.FileChange{file("vendor/lib", "160000", "")}, "[nested_repository vendor/lib]"},
		{"bare repository files", []verify.FileChange{file("r.git/HEAD", "100644", "ref: refs/heads/main\n"), file("r.git/config", "100644", "[core]\n\tfsmonitor = x\n")},
			"[nested_repository r.git]"},
		{"HEAD and config that are not git's", []verify.FileChange{file("doc/HEAD", "100644", "a heading\n"), file("doc/config", "100644", "x\n")}, "[]"},
		{"deleted", []verify.FileChange{{Path: ".gitmodules", Status: verify.Deleted, BaseMode: "100644", Base: []byte("x")}}, "[]"},
	}
	for _, tc := range cases {
		var got []string
		for _, f := range Landing(&verify.Change{Files: tc.f}) {
			got = append(got, f.Code+" "+f.Path)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
}

// TestAllowSubmoduleUpdates: the base's [gate] allow_submodule_updates lets
// an existing submodule move; a new gitlink, a .gitmodules change, and any
// move without the setting stay findings.
func TestAllowSubmoduleUpdates(t *testing.T) {
	move := verify.FileChange{Path: "third_party/lib", Status: verify.Modified, BaseMode: "160000", HeadMode: "160000"}
	added := verify.FileChange{Path: "vendor/new", Status: verify.Added, HeadMode: "160000"}
	modules := verify.FileChange{Path: ".gitmodules", Status: verify.Modified, BaseMode: "100644", HeadMode: "100644", Head: []byte("[submodule \"lib\"]\n\tpath = third_party/lib\n\turl = https://example.com/other\n")}
	change := &verify.Change{Files: []verify.FileChange{move, added, modules}}
	codes := func(fs []verify.Finding) string {
		var got []string
		for _, f := range fs {
			if f.Code == FindingNestedRepo || f.Code == FindingGitmodules {
				got = append(got, f.Code+" "+f.Path)
			}
		}
		return fmt.Sprint(got)
	}
	var cfg config.Config
	if got, want := codes(Check(change, cfg)), "[gitmodules .gitmodules nested_repository third_party/lib nested_repository vendor/new]"; got != want {
		t.Fatalf("without the setting: %s, want %s", got, want)
	}
	cfg.Gate.AllowSubmoduleUpdates = true
	if got, want := codes(Check(change, cfg)), "[gitmodules .gitmodules nested_repository vendor/new]"; got != want {
		t.Fatalf("with allow_submodule_updates: %s, want %s", got, want)
	}
	if got := codes(Landing(change)); got != "[nested_repository third_party/lib nested_repository vendor/new gitmodules .gitmodules]" {
		t.Fatalf("accept must still list the move: %s", got)
	}
}
