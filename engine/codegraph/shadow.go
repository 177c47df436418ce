package codegraph

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/bcode-dev/bcode/sandbox"
)

// The go command follows whatever the tree points it at: a .go file that is
// a symbolic link to a host file, a directory link, a go.mod replace
// directive naming a host directory, an assembler #include of an absolute
// path. So the indexer never runs it on the tree itself but on a shadow:
// a copy of the tree's regular files made through confined reads (no link
// is followed or copied), with replacements that leave the tree dropped
// and assembler includes that leave it blanked. Whatever the go command
// then reads, it reads from bcode's copy.
const (
	shadowGoFileMax    = 16 << 20  // one .go file
	shadowOtherFileMax = 1 << 20   // one other file (embedded data, assembly)
	shadowTotalMax     = 256 << 20 // the whole copy
	shadowFilesMax     = 50000
)

// shadowSkipDir: directories the go command never loads packages from
// and that are big (dependencies of other ecosystems, version control).
func shadowSkipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules"
}

// shadowStats says what the copy left out.
type shadowStats struct {
	Links   int // symbolic links (and other non-regular files), never read
	TooBig  int // files over their size cap, or past the total cap
	Dropped int // go.mod replacements and assembler includes that left the tree
}

// makeShadow copies conf's tree into dst (an empty directory).
func makeShadow(conf *sandbox.Confined, dst string) (shadowStats, error) {
	var st shadowStats
	root := conf.Dir()
	var total int64
	files := 0
	err := conf.WalkDir(".", func(slash string, d fs.DirEntry, err error) error {
		p := filepath.Join(root, filepath.FromSlash(slash))
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		rel, ok := relPath(root, p)
		if !ok {
			return nil
		}
		if d.IsDir() {
			if p != root && shadowSkipDir(d.Name()) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, filepath.FromSlash(rel)), 0o700)
		}
		if !d.Type().IsRegular() {
			st.Links++
			return nil
		}
		limit := int64(shadowOtherFileMax)
		if strings.HasSuffix(d.Name(), ".go") || d.Name() == "go.mod" || d.Name() == "go.sum" || d.Name() == "modules.txt" {
			limit = shadowGoFileMax
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if info.Size() > limit || total+info.Size() > shadowTotalMax || files >= shadowFilesMax {
			st.TooBig++
			return nil
		}
		data, err := conf.ReadFile(rel, limit+1)
		if err != nil || int64(len(data)) > limit {
			st.Links++ // replaced by a link, or grew, since the walk saw it
			return nil
		}
		total += int64(len(data))
		files++
		switch {
		case d.Name() == "go.mod":
			var n int
			data, n = confineGoMod(rel, data)
			st.Dropped += n
		case strings.HasSuffix(d.Name(), ".s") || strings.HasSuffix(d.Name(), ".S"):
			var n int
			data, n = confineIncludes(rel, data)
			st.Dropped += n
		}
		return os.WriteFile(filepath.Join(dst, filepath.FromSlash(rel)), data, 0o600)
	})
	if err != nil {
		return st, fmt.Errorf("copying the tree for the Go index: %w", err)
	}
	return st, nil
}

// confineGoMod drops the replace directives of the go.mod at rel whose
// directory lies outside the tree (an absolute path, or one climbing out
// with ".."). A go.mod that does not parse is kept as it is: the go command
// then fails on it, reading nothing else.
func confineGoMod(rel string, data []byte) ([]byte, int) {
	f, err := modfile.Parse(rel, data, nil)
	if err != nil {
		return data, 0
	}
	dir := path.Dir(rel)
	n := 0
	for _, r := range f.Replace {
		if r.New.Version != "" || !modfile.IsDirectoryPath(r.New.Path) {
			continue
		}
		target := filepath.ToSlash(r.New.Path)
		if !filepath.IsAbs(r.New.Path) && !strings.HasPrefix(target, "/") {
			target = path.Join(dir, target)
			if target != ".." && !strings.HasPrefix(target, "../") {
				continue
			}
		}
		if err := f.DropReplace(r.Old.Path, r.Old.Version); err == nil {
			n++
		}
	}
	if n == 0 {
		return data, 0
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return nil, n // an empty go.mod: the go command fails, reading nothing
	}
	return out, n
}

var asmInclude = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*["<]([^">\n]*)[">].*$`)

// confineIncludes blanks the #include lines of an assembly file (rel) that
// name an absolute path or climb out of the tree: the assembler would read
// that file from the host.
func confineIncludes(rel string, data []byte) ([]byte, int) {
	n := 0
	out := asmInclude.ReplaceAllFunc(data, func(line []byte) []byte {
		m := asmInclude.FindSubmatch(line)
		name := string(m[1])
		target := path.Join(path.Dir(rel), name)
		if strings.HasPrefix(name, "/") || strings.HasPrefix(name, "\\") || target == ".." || strings.HasPrefix(target, "../") || strings.Contains(name, "..") {
			n++
			return nil
		}
		return line
	})
	return out, n
}
