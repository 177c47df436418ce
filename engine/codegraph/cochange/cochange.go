// Package cochange mines a repository's own git history for what changes
// together: the association rules of Zimmermann et al., "Mining Version
// Histories to Guide Software Changes" (ICSE 2004). Each past commit is a
// transaction of the files and functions it touched; the confidence of
// "A → B" is the share of the commits touching A that also touched B.
//
// History is read with sandbox/git's hardened runner (no user or system
// configuration, no hooks, drivers neutralised, no pager, no external
// diff), bounded to the last MaxCommits non-merge commits of HEAD, and
// commits that touch more than MaxFiles files are skipped (a reformat or a
// vendoring commit says nothing about which code belongs together). The
// result depends only on the HEAD commit, so it is cached by commit id, in
// memory and on disk.
package cochange

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// Bounds of the mining.
const (
	MaxCommits = 400
	MaxFiles   = 30
	// maxLogBytes bounds what one mining run reads from git; past it the
	// oldest commits are dropped.
	maxLogBytes = 48 << 20
)

// version is bumped when the mined format or rules change, so disk caches
// of an older bcode are not reused.
const version = 1

// Entity names a function: its file and its (unqualified) name. Go methods
// are named by method name; Python methods by def name.
type Entity struct {
	File string `json:"f"`
	Name string `json:"n"`
}

// Commit is one transaction: what a past commit changed.
type Commit struct {
	ID    string   `json:"id"`
	Files []string `json:"files"`
	Funcs []Entity `json:"funcs"`
}

// History is the mined transactions, newest first.
type History struct {
	Head    string   `json:"head"`
	Version int      `json:"version"`
	Commits []Commit `json:"commits"`
	// Skipped counts commits left out for touching more than MaxFiles files.
	Skipped int `json:"skipped"`
	// prefix is the repository directory's path inside the git working
	// tree ("" at the top), stripped from every path.
	prefix string
}

// ErrNoHistory is returned for a directory outside any git repository or
// with no commit yet.
var ErrNoHistory = errors.New("cochange: no git history")

var (
	memMu sync.Mutex
	mem   = map[string]*History{} // by head commit
)

// Mine returns the history of the git repository holding dir, as seen from
// dir (paths relative to it). cacheDir, when not empty, holds one JSON file
// per mined head commit.
func Mine(ctx context.Context, dir, cacheDir string) (*History, error) {
	// One git process finds HEAD; the repository is opened (three more)
	// and the log read only when that commit was never mined.
	at, err := git.HeadOf(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoHistory, err)
	}
	head := at.Commit
	prefix, err := relPrefix(at.Top, dir)
	if err != nil {
		return nil, err
	}
	memMu.Lock()
	h := mem[head]
	memMu.Unlock()
	if h == nil && cacheDir != "" {
		h = readCache(cacheDir, head)
	}
	if h == nil {
		repo, err := git.Open(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoHistory, err)
		}
		h, err = mine(ctx, repo, head)
		if err != nil {
			return nil, err
		}
		if cacheDir != "" {
			writeCache(cacheDir, h) // best effort: a cache that cannot be written is only slower
		}
	}
	memMu.Lock()
	if len(mem) > 64 {
		clear(mem)
	}
	mem[head] = h
	memMu.Unlock()
	out := *h
	out.prefix = prefix
	return &out, nil
}

func relPrefix(top, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("cochange: %s is not inside %s", dir, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel) + "/", nil
}

// funcAttributes selects git's built-in function-name patterns for Go and
// Python, so each hunk header names the function it falls in. It is
// bcode's own file, given with core.attributesFile; the repository's
// .gitattributes can still override it, and then headers fall back to
// git's default (a line starting with a letter), which only coarsens the
// function names.
const funcAttributes = "*.go diff=golang\n*.py diff=python\n"

var (
	attrOnce sync.Once
	attrPath string
)

func attributesFile() string {
	attrOnce.Do(func() {
		dir, err := sandbox.CacheDir("")
		if err != nil {
			dir = filepath.Join(os.TempDir(), "bcode")
		}
		if os.MkdirAll(dir, 0o700) != nil {
			return
		}
		p := filepath.Join(dir, "funcname.gitattributes")
		if b, err := sandbox.ReadPath(p, 64<<10); err == nil && string(b) == funcAttributes {
			attrPath = p
			return
		}
		tmp, err := os.CreateTemp(dir, "funcname-*.tmp")
		if err != nil {
			return
		}
		_, werr := tmp.WriteString(funcAttributes)
		if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
			os.Remove(tmp.Name())
			return
		}
		attrPath = p
	})
	return attrPath
}

func mine(ctx context.Context, repo *git.Repo, head string) (*History, error) {
	var args []string
	if a := attributesFile(); a != "" {
		args = append(args, "-c", "core.attributesFile="+a)
	}
	args = append(args, "-c", "core.quotePath=false", "log", "-n", fmt.Sprint(MaxCommits),
		"--no-merges", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color",
		"-p", "-U0", "--src-prefix=a/", "--dst-prefix=b/", "--format=%x00commit %H", head)
	out, err := repo.Git(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("cochange: reading history: %w", err)
	}
	if len(out) > maxLogBytes {
		out = out[:maxLogBytes] // the cut commit is parsed as far as it goes
	}
	h := Parse(out)
	h.Head = head
	return h, nil
}

var (
	hunkRe   = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$`)
	goFuncRe = regexp.MustCompile(`^\s*func\s*(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)`)
	pyDefRe  = regexp.MustCompile(`^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)`)
)

// funcName is the function a declaration line opens, or "".
func funcName(file, line string) string {
	var m []string
	switch path.Ext(file) {
	case ".go":
		m = goFuncRe.FindStringSubmatch(line)
	case ".py":
		m = pyDefRe.FindStringSubmatch(line)
	}
	if m == nil {
		return ""
	}
	return m[1]
}

// Parse reads `git log -p -U0 --format=%x00commit %H` output into
// transactions. Exported for tests and the benchmark.
func Parse(out []byte) *History {
	h := &History{Version: version}
	for _, rec := range bytes.Split(out, []byte("\x00commit ")) {
		if len(rec) == 0 {
			continue
		}
		lines := strings.Split(string(rec), "\n")
		c := Commit{ID: strings.TrimSpace(lines[0])}
		files := map[string]bool{}
		funcs := map[Entity]bool{}
		var file string
		firstInHunk := false
		for _, l := range lines[1:] {
			switch {
			case strings.HasPrefix(l, "diff --git "):
				file = ""
			case strings.HasPrefix(l, "--- "):
				if p, ok := strings.CutPrefix(l, "--- a/"); ok {
					file = p
				}
			case strings.HasPrefix(l, "+++ "):
				if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
					file = p // an added file has no "a/" side
				}
				if file != "" {
					files[file] = true
				}
			case strings.HasPrefix(l, "@@ "):
				m := hunkRe.FindStringSubmatch(l)
				firstInHunk = true
				if m == nil || file == "" {
					continue
				}
				// The header names the function the hunk starts in, unless
				// the hunk starts on a declaration (then the header shows
				// the one before it); that case is taken from the line.
				if n := funcName(file, m[1]); n != "" {
					funcs[Entity{file, n}] = false // provisional
				}
			case (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && file != "":
				if n := funcName(file, l[1:]); n != "" {
					if firstInHunk {
						// Drop the provisional header name of this hunk.
						for e, sure := range funcs {
							if !sure && e.File == file {
								delete(funcs, e)
							}
						}
					}
					funcs[Entity{file, n}] = true
				} else if firstInHunk {
					for e, sure := range funcs {
						if !sure && e.File == file {
							funcs[e] = true
						}
					}
				}
				firstInHunk = false
			}
		}
		if len(files) == 0 {
			continue
		}
		if len(files) > MaxFiles {
			h.Skipped++
			continue
		}
		c.Files = sortedKeys(files)
		for e := range funcs {
			c.Funcs = append(c.Funcs, e)
		}
		slices.SortFunc(c.Funcs, func(a, b Entity) int { return strings.Compare(a.File+"\x00"+a.Name, b.File+"\x00"+b.Name) })
		h.Commits = append(h.Commits, c)
	}
	return h
}

// Touches counts the commits that changed the function name of file.
func (h *History) Touches(file, name string) int {
	if h == nil {
		return 0
	}
	n := 0
	for _, c := range h.Commits {
		if slices.Contains(c.Funcs, Entity{h.prefix + file, name}) {
			n++
		}
	}
	return n
}

// Rule is the consequent of an association rule with its strength.
type Rule struct {
	Support    int     // commits that touched both
	Confidence float64 // Support / commits that touched the antecedent
	// Weighted is Confidence with each commit counted by how focused it
	// was: a commit that touched at most focusFuncs functions (focusFiles
	// files, for file rules) counts 1, a larger one focusFuncs/n. The
	// commit that created a file full of functions then says little about
	// any one pair of them.
	Weighted float64
}

// A commit this focused counts fully toward Weighted.
const (
	focusFuncs = 6
	focusFiles = 4
)

// Related returns, for the antecedent (a file, and a function in it when
// name is not empty), every file and function that changed with it, with
// the rule's support and confidence. Paths are relative to the directory
// Mine was given; those outside it are left out. antecedent is how many
// commits touched the function (or the file when name is empty or the
// function was never seen).
func (h *History) Related(file, name string) (files map[string]Rule, funcs map[Entity]Rule, antecedent int) {
	files, funcs = map[string]Rule{}, map[Entity]Rule{}
	if h == nil {
		return files, funcs, 0
	}
	full := h.prefix + file
	byFunc := name != ""
	if byFunc {
		n := 0
		for _, c := range h.Commits {
			if slices.Contains(c.Funcs, Entity{full, name}) {
				n++
			}
		}
		byFunc = n > 0
	}
	for _, c := range h.Commits {
		hit := false
		if byFunc {
			hit = slices.Contains(c.Funcs, Entity{full, name})
		} else {
			_, hit = slices.BinarySearch(c.Files, full)
		}
		if !hit {
			continue
		}
		antecedent++
		wFiles := min(1, float64(focusFiles)/float64(max(1, len(c.Files)-1)))
		wFuncs := min(1, float64(focusFuncs)/float64(max(1, len(c.Funcs)-1)))
		for _, f := range c.Files {
			if rel, ok := strings.CutPrefix(f, h.prefix); ok && f != full {
				r := files[rel]
				r.Support++
				r.Weighted += wFiles
				files[rel] = r
			}
		}
		for _, e := range c.Funcs {
			rel, ok := strings.CutPrefix(e.File, h.prefix)
			if !ok || (e.File == full && e.Name == name) {
				continue
			}
			k := Entity{rel, e.Name}
			r := funcs[k]
			r.Support++
			r.Weighted += wFuncs
			funcs[k] = r
		}
	}
	for k, r := range files {
		r.Confidence = float64(r.Support) / float64(antecedent)
		r.Weighted /= float64(antecedent)
		files[k] = r
	}
	for k, r := range funcs {
		r.Confidence = float64(r.Support) / float64(antecedent)
		r.Weighted /= float64(antecedent)
		funcs[k] = r
	}
	return files, funcs, antecedent
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func cachePath(dir, head string) string {
	return filepath.Join(dir, fmt.Sprintf("cochange-v%d-%s.json", version, head))
}

func readCache(dir, head string) *History {
	b, err := sandbox.ReadPath(cachePath(dir, head), 256<<20)
	if err != nil {
		return nil
	}
	var h History
	if json.Unmarshal(b, &h) != nil || h.Head != head || h.Version != version {
		return nil
	}
	return &h
}

func writeCache(dir string, h *History) {
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	b, err := json.Marshal(h)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, "cochange-*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), cachePath(dir, h.Head)) != nil {
		os.Remove(tmp.Name())
	}
}
