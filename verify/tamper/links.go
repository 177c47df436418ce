package tamper

import (
	"fmt"
	"path"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// The kernel's limits on resolving a path (Linux: MAXSYMLINKS, PATH_MAX).
const (
	maxLinkHops = 40
	pathMax     = 4096
)

// resolved is where one link leads: ok, or the finding code and why not.
type resolved struct {
	code string // "" when the link resolves to something inside the tree
	why  string
	to   string // the path inside the tree it resolves to, when ok
}

// judgeLinks resolves every link of the tree.
func (ix *treeIndex) judgeLinks() []keyed {
	var out []keyed
	for _, p := range ix.order {
		if ix.entries[p].Mode != verify.ModeSymlink {
			continue
		}
		r := ix.resolve(p)
		if r.code == "" {
			continue
		}
		out = append(out, finding(r.code, p, 0,
			fmt.Sprintf("symbolic link to %q: %s", clip(ix.targets[p], 200), r.why)))
	}
	return out
}

// resolve follows link as the kernel does when a program opens it from a
// checkout of the tree: one component at a time from the link's directory,
// every link met on the way (in the middle or at the end) replaced by its
// target relative to the directory holding it, ".." taken from where the
// walk physically is (so it applies to a link's target, not to the link's
// name), an absolute target leaving the tree at once, and at most 40 links.
func (ix *treeIndex) resolve(link string) resolved {
	cur := splitDir(path.Dir(link)) // physical directory, never through a link
	hops := 0
	var chain []string // the links followed, for the message
	pending := []string{}
	next := link // the link whose target is expanded next
	for {
		if next != "" {
			hops++
			if hops > maxLinkHops {
				return resolved{code: FindingSymlinkLoop, why: fmt.Sprintf("more than %d links on the way (%s): the kernel gives up with ELOOP", maxLinkHops, chainText(chain))}
			}
			t := ix.targets[next]
			if i := strings.IndexByte(t, 0); i >= 0 {
				t = t[:i] // symlink(2) takes a C string
			}
			chain = append(chain, fmt.Sprintf("%s -> %q", next, clip(t, 80)))
			switch {
			case t == "":
				return resolved{code: FindingSymlinkDangling, why: "an empty target: the link cannot be made, or leads nowhere"}
			case len(t) >= pathMax:
				return resolved{code: FindingSymlinkDangling, why: "a target longer than PATH_MAX"}
			case strings.HasPrefix(t, "/"):
				return resolved{code: FindingSymlinkOutside, why: fmt.Sprintf("resolves to the absolute path %q of the host", clip(t, 200)) + via(chain)}
			}
			pending = append(strings.Split(t, "/"), pending...)
			next = ""
		}
		if len(pending) == 0 {
			return resolved{to: strings.Join(cur, "/")}
		}
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return resolved{code: FindingSymlinkOutside, why: "leaves the tree through \"..\"" + via(chain)}
			}
			cur = cur[:len(cur)-1]
			continue
		}
		if isDotGit(c) {
			return resolved{code: FindingSymlinkOutside, why: fmt.Sprintf("reaches into %s, git's own directory", path.Join(append(cur, c)...)) + via(chain)}
		}
		p := path.Join(append(cur, c)...)
		e, isEntry := ix.entries[p]
		switch {
		case isEntry && e.Mode == verify.ModeSymlink:
			next = p // its target is relative to cur, the directory holding it
		case isEntry && e.Mode == verify.ModeGitlink:
			cur = append(cur, c) // a directory, whose files this tree does not hold
		case isEntry:
			if len(pending) > 0 {
				return resolved{code: FindingSymlinkDangling, why: fmt.Sprintf("runs through the file %s as if it were a directory (ENOTDIR)", p) + via(chain)}
			}
			return resolved{to: p}
		case ix.dirs[p]:
			cur = append(cur, c)
		case ix.inGitlink(cur):
			return resolved{code: FindingSymlinkDangling, why: fmt.Sprintf("runs into a submodule at %s, whose files this tree does not hold", path.Join(cur...)) + via(chain)}
		default:
			return resolved{code: FindingSymlinkDangling, why: fmt.Sprintf("%s does not exist in the landed tree", p) + via(chain)}
		}
	}
}

// inGitlink: dir is a gitlink or below one.
func (ix *treeIndex) inGitlink(dir []string) bool {
	for i := len(dir); i > 0; i-- {
		if e, ok := ix.entries[path.Join(dir[:i]...)]; ok && e.Mode == verify.ModeGitlink {
			return true
		}
	}
	return false
}

func splitDir(d string) []string {
	if d == "." || d == "" {
		return nil
	}
	return strings.Split(d, "/")
}

func via(chain []string) string {
	if len(chain) < 2 {
		return ""
	}
	return " (through " + chainText(chain) + ")"
}

func chainText(chain []string) string {
	if len(chain) > 6 {
		chain = append(chain[:3:3], "…", chain[len(chain)-1])
	}
	return strings.Join(chain, ", ")
}
