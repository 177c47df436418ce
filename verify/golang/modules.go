package golang

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// layout is where the Go modules of a snapshot are.
type layout struct {
	// Roots are the module directories to run the go command in,
	// slash-separated and relative to the snapshot ("." for its root),
	// sorted deepest last.
	Roots []string
	// Workspace is set when the snapshot's root has a go.work that lists
	// the roots; the go command then runs in workspace mode.
	Workspace bool
	// Skipped explains modules found but left out.
	Skipped []string
}

// maxGoWork caps how much of a go.work file is read.
const maxGoWork = 1 << 20

// findModules finds the modules of the snapshot in dir: the modules a
// go.work at the root uses, or else every go.mod below dir outside vendor,
// testdata and directories the go command ignores.
func findModules(dir string) (layout, error) {
	var l layout
	var mods []string
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return l, err
	}
	defer conf.Close()
	err = conf.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // unreadable subdirectory: nothing of ours in it
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (name == "vendor" || name == "testdata" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" && d.Type().IsRegular() {
			mods = append(mods, path.Dir(p))
		}
		return nil
	})
	if err != nil {
		return l, err
	}
	sort.Strings(mods)
	work, err := conf.ReadFile("go.work", maxGoWork)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.Roots = mods
		return l, nil
	case err != nil:
		return l, err
	}
	l.Workspace = true
	used := map[string]bool{}
	for _, u := range parseWorkUses(work) {
		clean := path.Clean(filepath.ToSlash(u))
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			l.Skipped = append(l.Skipped, "go.work uses "+u+", which is outside the repository")
			continue
		}
		used[clean] = true
		l.Roots = append(l.Roots, clean)
	}
	sort.Strings(l.Roots)
	for _, m := range mods {
		if !used[m] {
			l.Skipped = append(l.Skipped, "module "+m+" is not used by go.work")
		}
	}
	return l, nil
}

// parseWorkUses returns the directories of a go.work's use directives, in
// either the single-line or the block form.
func parseWorkUses(src []byte) []string {
	var out []string
	inBlock := false
	for _, line := range strings.Split(string(src), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if inBlock {
			if f[0] == ")" {
				inBlock = false
				continue
			}
			out = append(out, unquote(f[0]))
			continue
		}
		if f[0] != "use" || len(f) < 2 {
			continue
		}
		if f[1] == "(" {
			inBlock = true
			continue
		}
		out = append(out, unquote(f[1]))
	}
	return out
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// rootOf returns the deepest of roots that contains the slash-separated
// path p ("" when none does).
func rootOf(roots []string, p string) string {
	best := ""
	for _, r := range roots {
		if r == "." || p == r || strings.HasPrefix(p, r+"/") {
			if best == "" || len(r) > len(best) || best == "." {
				best = r
			}
		}
	}
	return best
}

// absDirs returns the absolute forms of dir the go command may print: as
// given and with symbolic links resolved.
func absDirs(dir string) []string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return []string{dir}
	}
	out := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		out = append(out, real)
	}
	return out
}

// relTo makes the go command's absolute p relative to the snapshot,
// slash-separated; ok is false when p is outside it.
func relTo(bases []string, p string) (string, bool) {
	for _, b := range bases {
		rel, err := filepath.Rel(b, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(os.PathSeparator)) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// goCommand is how to run the go command in one module root of l: the
// directory, the environment and the flags that keep it in the right mode.
// Outside a workspace GOWORK=off keeps a go.work above the snapshot from
// pulling it into someone else's workspace; inside one, -mod=readonly
// overrides a GOFLAGS=-mod=mod the go command refuses in workspace mode.
func (a *Adapter) goCommand(dir string, l layout, root string) (string, []string, []string) {
	env := append([]string(nil), a.Env...)
	var flags []string
	if l.Workspace {
		flags = append(flags, "-mod=readonly")
	} else {
		env = append(env, "GOWORK=off")
	}
	return filepath.Join(dir, filepath.FromSlash(root)), env, flags
}

// inModule splits a package pattern relative to the snapshot ("." or
// "./dir", optionally ending in "/...") into the module root of l that
// holds it and the pattern relative to that root. ok is false when no
// module holds it.
func inModule(l layout, pattern string) (root, rel string, ok bool) {
	dirPart, recursive := strings.CutSuffix(pattern, "/...")
	if pattern == "./..." {
		dirPart, recursive = ".", true
	}
	relDir := strings.TrimPrefix(strings.TrimPrefix(dirPart, "."), "/")
	if relDir == "" {
		relDir = "."
	}
	root = rootOf(l.Roots, relDir)
	if root == "" {
		return "", "", false
	}
	sub := relDir
	if root != "." {
		sub = strings.TrimPrefix(strings.TrimPrefix(relDir, root), "/")
	}
	rel = packageOfDir(sub)
	if recursive {
		rel += "/..."
	}
	return root, rel, true
}
