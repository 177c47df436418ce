package tamper

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/bcode-dev/bcode/verify"
)

// judgePaths reports what the tree's paths alone make git or the file
// system do: gitlinks, .gitmodules, the files of a bare repository, paths
// that collide on case- or normalization-insensitive file systems, and
// paths git refuses or reads as its own directory.
func (ix *treeIndex) judgePaths() []keyed {
	var out []keyed
	files := map[string]map[string]verify.TreeEntry{} // dir -> base -> entry
	for _, p := range ix.order {
		e := ix.entries[p]
		if why := invalidPath(p); why != "" {
			out = append(out, finding(FindingInvalidPath, p, 0, why))
		}
		switch {
		case e.Mode == verify.ModeGitlink:
			k := finding(FindingNestedRepo, p, 0, "a gitlink (submodule entry): git would enter that directory as a repository of its own")
			k.key += "\x00" + e.OID // moved to another commit: new
			out = append(out, k)
		case isModulesFile(path.Base(p)):
			msg := ".gitmodules: it names repositories git fetches and commands `git submodule` runs"
			if updateCommand.MatchString(ix.modules[p]) {
				msg = ".gitmodules with `update = !command`: the next `git submodule update` would run that command"
			}
			k := finding(FindingGitmodules, p, 0, msg)
			k.key += "\x00" + e.OID
			out = append(out, k)
		}
		if isDotFile(path.Base(p), "lfsconfig", "") && !strings.Contains(p, "/") {
			k := finding(FindingLFSConfig, p, 0, ".lfsconfig: git-lfs reads it from the top of the checkout (lfs.url and the like), so objects and credentials go where it says")
			k.key += "\x00" + e.OID
			out = append(out, k)
		}
		dir, base := path.Split(p)
		if files[dir] == nil {
			files[dir] = map[string]verify.TreeEntry{}
		}
		files[dir][base] = e
	}
	for _, dir := range slices.Sorted(maps.Keys(files)) {
		if ix.looksBare(files[dir]) {
			p := strings.TrimSuffix(dir, "/")
			if p == "" {
				p = "."
			}
			out = append(out, finding(FindingNestedRepo, p, 0, "the files of a bare git repository (HEAD, config): git reads this directory as a repository, with its own configuration"))
		}
	}
	return append(out, ix.collisions()...)
}

// updateCommand matches a submodule's `update = !command`.
var updateCommand = regexp.MustCompile(`(?m)^\s*update\s*=\s*!`)

// invalidPath says why git refuses p, or reads part of it as its own
// directory on some file system; "" when neither.
func invalidPath(p string) string {
	if strings.IndexByte(p, 0) >= 0 {
		return "a NUL in the path"
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "" || c == "." || c == "..":
			return fmt.Sprintf("a %q component: git refuses the path, or it leaves the tree", c)
		case isDotGit(c):
			return fmt.Sprintf("the component %q is git's own directory on some file system: it would plant configuration or hooks", c)
		case strings.ContainsRune(c, '\\'):
			return fmt.Sprintf("the component %q holds a backslash, a directory separator on Windows", c)
		}
	}
	return ""
}

// looksBare: a directory with a HEAD that reads like git's (a symbolic ref
// or an object id) and a config file next to it.
func (ix *treeIndex) looksBare(files map[string]verify.TreeEntry) bool {
	head, ok := files["HEAD"]
	if !ok || head.Mode == verify.ModeGitlink {
		return false
	}
	if _, ok := files["config"]; !ok {
		return false
	}
	h := strings.TrimSpace(ix.heads[head.OID])
	if strings.HasPrefix(h, "ref: ") {
		return true
	}
	return (len(h) == 40 || len(h) == 64) && strings.Trim(h, "0123456789abcdef") == ""
}

// collisions reports paths (files, links, gitlinks and the directories
// holding them) that name one file on macOS or Windows: equal once letter
// case is folded, Unicode normalized (HFS+ and APFS), the code points HFS+
// ignores dropped and trailing dots and spaces (Windows) trimmed. On
// checkout there, one overwrites the other, or a file is written through
// a link that the diff shows as a separate path.
func (ix *treeIndex) collisions() []keyed {
	fold := cases.Fold()
	folded := map[string]string{} // component -> its folded form
	seen := map[string]string{}
	names := slices.Sorted(maps.Keys(ix.dirs))
	names = append(names, ix.order...)
	var out []keyed
	for _, p := range names {
		if p == "" {
			continue
		}
		parts := strings.Split(p, "/")
		for i, c := range parts {
			k, ok := folded[c]
			if !ok {
				k = foldName(fold, c)
				folded[c] = k
			}
			parts[i] = k
		}
		k := strings.Join(parts, "/")
		if other, ok := seen[k]; ok && other != p {
			out = append(out, finding(FindingPathCollision, p, 0,
				fmt.Sprintf("%q and %q are one file on a case-insensitive file system (macOS, Windows): on checkout there one overwrites the other", other, p)))
			continue
		}
		seen[k] = p
	}
	return out
}

// foldName is a name as a case- and normalization-insensitive file system
// compares it; ASCII needs only lower case.
func foldName(fold cases.Caser, c string) string {
	ascii := true
	for i := 0; i < len(c) && ascii; i++ {
		ascii = c[i] < 0x80
	}
	if ascii {
		return strings.TrimRight(strings.ToLower(c), ". ")
	}
	return strings.TrimRight(norm.NFC.String(fold.String(norm.NFD.String(stripIgnorable(c)))), ". ")
}
