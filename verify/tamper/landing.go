package tamper

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Finding codes for what landing a change would put in a checkout that
// git, or the user's next command, acts on rather than merely stores.
const (
	// FindingSymlinkOutside: a symbolic link whose target is absolute or
	// leaves the tree (or reaches into .git): after landing, a read or
	// write through it touches a host file (/etc/shadow, the ledger, an
	// SSH key).
	FindingSymlinkOutside = "symlink_outside"
	// FindingAttributesDriver: a .gitattributes that routes files to a
	// filter, diff or merge driver: the user's git runs whatever program
	// the user's (or a later) configuration names for it.
	FindingAttributesDriver = "gitattributes_driver"
	// FindingGitmodules: a .gitmodules added or changed; `update = !cmd`
	// runs cmd on the next `git submodule update`, and an invalid entry
	// makes git fail in the checkout.
	FindingGitmodules = "gitmodules"
	// FindingNestedRepo: a gitlink, a .git path component, or the files
	// of a bare repository: git would read them as a repository, with its
	// own configuration.
	FindingNestedRepo = "nested_repository"
)

// builtinDiff and builtinMerge are the drivers git implements itself: an
// attribute naming one runs no program unless the user configured one of
// that name.
var (
	builtinDiff = map[string]bool{"ada": true, "bash": true, "bibtex": true, "cpp": true, "csharp": true, "css": true,
		"dts": true, "elixir": true, "fortran": true, "fountain": true, "golang": true, "html": true, "java": true,
		"kotlin": true, "markdown": true, "matlab": true, "objc": true, "pascal": true, "perl": true, "php": true,
		"python": true, "ruby": true, "rust": true, "scheme": true, "tex": true}
	builtinMerge = map[string]bool{"text": true, "binary": true, "union": true}
)

// Landing reports what the head side of change would land that git acts
// on: links out of the tree, attribute drivers, .gitmodules, nested or
// bare repositories and gitlinks. Check includes it, so a change carrying
// any of them is never verified; accept lists them and lands them only
// with --force.
func Landing(change *verify.Change) []verify.Finding {
	if change == nil {
		return nil
	}
	var out []verify.Finding
	heads := map[string]map[string][]byte{} // dir -> base name -> head content
	for _, f := range change.Files {
		if f.HeadMode == "" {
			continue // deleted: lands nothing
		}
		out = append(out, outsideLink(f)...)
		out = append(out, attributesDriver(f)...)
		out = append(out, gitmodules(f)...)
		out = append(out, gitlinkOrDotGit(f)...)
		dir, base := path.Split(f.Path)
		if heads[dir] == nil {
			heads[dir] = map[string][]byte{}
		}
		heads[dir][base] = f.Head
	}
	for dir, files := range heads {
		if looksBare(files) {
			p := strings.TrimSuffix(dir, "/")
			if p == "" {
				p = "."
			}
			out = append(out, verify.Finding{Code: FindingNestedRepo, Path: p,
				Message: "the files of a bare git repository (HEAD, config): git reads this directory as a repository, with its own configuration"})
		}
	}
	return out
}

func outsideLink(f verify.FileChange) []verify.Finding {
	if f.HeadMode != "120000" {
		return nil
	}
	target := string(f.Head)
	var why string
	switch {
	case strings.HasPrefix(target, "/") || strings.HasPrefix(target, `\`) || (len(target) > 1 && target[1] == ':'):
		why = "an absolute path"
	default:
		resolved := path.Join(path.Dir(f.Path), target)
		switch {
		case resolved == ".." || strings.HasPrefix(resolved, "../"):
			why = "outside the repository"
		case hasGitComponent(resolved):
			why = "inside the repository's .git directory"
		}
	}
	if why == "" {
		return nil
	}
	return []verify.Finding{{Code: FindingSymlinkOutside, Path: f.Path,
		Message: fmt.Sprintf("symbolic link to %q, %s: reading or writing through it after landing touches a file of the host", target, why)}}
}

// attrDriver matches a filter, diff or merge attribute set to a value.
var attrDriver = regexp.MustCompile(`(?:^|\s)(filter|diff|merge)=(\S+)`)

func attributesDriver(f verify.FileChange) []verify.Finding {
	if path.Base(f.Path) != ".gitattributes" || f.HeadMode == "120000" {
		return nil
	}
	var out []verify.Finding
	sc := bufio.NewScanner(bytes.NewReader(f.Head))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		for _, m := range attrDriver.FindAllStringSubmatch(text, -1) {
			kind, name := m[1], m[2]
			if (kind == "diff" && builtinDiff[name]) || (kind == "merge" && builtinMerge[name]) {
				continue
			}
			out = append(out, verify.Finding{Code: FindingAttributesDriver, Path: f.Path, Line: line,
				Message: fmt.Sprintf("routes files to the %s driver %q: git runs whatever program a configuration names for it", kind, name)})
		}
	}
	return out
}

// updateCommand matches a submodule's `update = !command`.
var updateCommand = regexp.MustCompile(`(?m)^\s*update\s*=\s*!`)

func gitmodules(f verify.FileChange) []verify.Finding {
	if path.Base(f.Path) != ".gitmodules" {
		return nil
	}
	msg := fmt.Sprintf(".gitmodules %s: it names repositories git fetches and commands `git submodule` runs", f.Status)
	if updateCommand.Match(f.Head) {
		msg = fmt.Sprintf(".gitmodules %s with `update = !command`: the next `git submodule update` would run that command", f.Status)
	}
	return []verify.Finding{{Code: FindingGitmodules, Path: f.Path, Message: msg}}
}

func gitlinkOrDotGit(f verify.FileChange) []verify.Finding {
	switch {
	case f.HeadMode == "160000":
		return []verify.Finding{{Code: FindingNestedRepo, Path: f.Path,
			Message: "a gitlink (submodule entry): git would enter that directory as a repository of its own"}}
	case hasGitComponent(f.Path):
		return []verify.Finding{{Code: FindingNestedRepo, Path: f.Path,
			Message: "a path through a .git directory: it would plant configuration or hooks for git"}}
	}
	return nil
}

func hasGitComponent(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.EqualFold(strings.TrimRight(c, ". "), ".git") {
			return true
		}
	}
	return false
}

// looksBare: a directory with a HEAD that reads like git's (a symbolic ref
// or an object id) and a config file next to it.
func looksBare(files map[string][]byte) bool {
	head, ok := files["HEAD"]
	if !ok {
		return false
	}
	if _, ok := files["config"]; !ok {
		return false
	}
	h := strings.TrimSpace(string(head))
	if strings.HasPrefix(h, "ref: ") {
		return true
	}
	return (len(h) == 40 || len(h) == 64) && strings.Trim(h, "0123456789abcdef") == ""
}
