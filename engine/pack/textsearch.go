package pack

import (
	"cmp"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// codeExts are the files text search looks at.
var codeExts = map[string]bool{
	".go": true, ".py": true, ".pyi": true, ".js": true, ".ts": true, ".rs": true, ".java": true,
	".c": true, ".h": true, ".cc": true, ".cpp": true, ".rb": true, ".md": true, ".toml": true,
	".yaml": true, ".yml": true, ".cfg": true, ".ini": true, ".txt": true, ".sh": true,
}

var keywords = map[string]bool{
	"def": true, "class": true, "return": true, "self": true, "import": true, "from": true, "None": true,
	"True": true, "False": true, "func": true, "var": true, "const": true, "type": true, "struct": true,
	"interface": true, "package": true, "if": true, "else": true, "for": true, "range": true, "nil": true,
	"err": true, "error": true, "string": true, "int": true, "bool": true, "len": true, "print": true,
	"pass": true, "raise": true, "with": true, "while": true, "and": true, "not": true, "elif": true,
	"try": true, "except": true, "lambda": true, "yield": true, "async": true, "await": true,
}

// fileHits is one file's text-search score.
type fileHits struct {
	file  string
	hits  int
	lines []int // matching line numbers, ascending
}

// searchIdentifiers lists the identifiers text search looks for: those of
// the selection's lines (if any) and of the goal.
func (b *builder) searchIdentifiers(extra string) []string {
	set := map[string]bool{}
	add := func(text string) {
		for _, w := range identRe.FindAllString(text, -1) {
			if !keywords[w] && !stopWords[strings.ToLower(w)] {
				set[w] = true
			}
		}
	}
	if b.sel != nil {
		if l, err := b.src.lines(b.sel.File); err == nil {
			add(strings.Join(l[b.sel.StartLine-1:b.sel.EndLine], "\n"))
		}
	}
	add(b.in.Goal)
	add(extra)
	return sortedSet(set)
}

// searchFiles ranks the repository's code files by whole-word hits of
// idents. Names come from walking the tree (which never follows links);
// contents only through the confined root.
func (b *builder) searchFiles(idents []string) []fileHits {
	if len(idents) == 0 {
		return nil
	}
	quoted := make([]string, len(idents))
	for i, id := range idents {
		quoted[i] = regexp.QuoteMeta(id)
	}
	re := regexp.MustCompile(`\b(?:` + strings.Join(quoted, "|") + `)\b`)
	root := b.conf.Dir()
	var out []fileHits
	_ = b.conf.WalkDir(".", func(slash string, d fs.DirEntry, err error) error {
		p := filepath.Join(root, filepath.FromSlash(slash))
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "vendor" || d.Name() == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !codeExts[path.Ext(d.Name())] {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		l, err := b.src.lines(rel)
		if err != nil {
			return nil
		}
		fh := fileHits{file: rel}
		for i, line := range l {
			if n := len(re.FindAllStringIndex(line, -1)); n > 0 {
				fh.hits += n
				fh.lines = append(fh.lines, i+1)
			}
		}
		if fh.hits > 0 {
			out = append(out, fh)
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, c fileHits) int { return cmp.Or(cmp.Compare(c.hits, a.hits), cmp.Compare(a.file, c.file)) })
	return out
}

// textSearchSections stand in for the graph when there is none: files
// ranked by hits of the selection's and the goal's identifiers, with their
// matching lines.
func (b *builder) textSearchSections(why string) []candidate {
	c := candidate{
		title:  "Related files (text search)",
		reason: "files ranked by whole-word hits of the selection's and the goal's identifiers",
		note:   why,
	}
	for _, fh := range b.searchFiles(b.searchIdentifiers("")) {
		if b.sel != nil && fh.file == b.sel.File {
			continue
		}
		var lines []string
		for i, n := range fh.lines {
			if i == 6 {
				lines = append(lines, fmt.Sprintf("  … %d more matching lines", len(fh.lines)-6))
				break
			}
			text, _ := b.src.snippet(fh.file, n, n)
			lines = append(lines, fmt.Sprintf("  %d: %s", n, strings.TrimSpace(truncate(text, 160))))
		}
		c.items = append(c.items, item{
			label: fh.file,
			full:  fmt.Sprintf("%s (%d hits):\n%s", fh.file, fh.hits, strings.Join(lines, "\n")),
			short: fmt.Sprintf("%s (%d hits)", fh.file, fh.hits),
			files: []string{fh.file},
		})
	}
	if len(c.items) == 0 && c.note == "" {
		c.note = "no identifier of the selection or the goal was found elsewhere"
	}
	return []candidate{c}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
