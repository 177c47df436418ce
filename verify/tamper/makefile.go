package tamper

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// makeRule is what make would run for one target.
type makeRule struct {
	line   int // 1-based line of the target's first rule line
	deps   []string
	recipe []string
}

// makefile is the part of a makefile that decides what its targets run.
type makefile struct {
	rules map[string]*makeRule
	phony map[string]bool
	// vars holds each variable's assignments in order ("= value",
	// "+= more"), so a test recipe's $(FLAGS) can be compared by value.
	vars map[string][]string
}

// makefileNames are GNU make's default makefile names in the order it looks
// for them: a new file earlier in the list silently replaces a later one.
var makefileNames = []string{"GNUmakefile", "makefile", "Makefile"}

func isMakefile(p string) bool {
	base := path.Base(p)
	return slices.Contains(makefileNames, base) || strings.HasSuffix(base, ".mk")
}

// makefileTargets reports test targets whose prerequisites or recipe a
// change alters or deletes. Everything else in a makefile may change freely.
func makefileTargets(change *verify.Change, f verify.FileChange) []verify.Finding {
	if !isMakefile(f.Path) || isBinary(f.Base) || isBinary(f.Head) {
		return nil
	}
	base, baseName := f.Base, f.Path
	if f.Base == nil {
		// A new GNUmakefile or makefile takes over from a Makefile the
		// base already had: judge the new file against the one it hides.
		base, baseName = shadowedMakefile(change, f.Path)
	}
	return compareMakefiles(f.Path, baseName, parseMakefile(base), parseMakefile(f.Head))
}

// shadowedMakefile returns the base content of the makefile that a new file
// at p replaces in make's lookup order, if any.
func shadowedMakefile(change *verify.Change, p string) ([]byte, string) {
	if change.Workspace == nil {
		return nil, ""
	}
	i := slices.Index(makefileNames, path.Base(p))
	if i < 0 {
		return nil, ""
	}
	for _, name := range makefileNames[i+1:] {
		other := path.Join(path.Dir(p), name)
		if content, err := change.Workspace.ReadBase(context.Background(), other); err == nil {
			return content, other
		}
	}
	return nil, ""
}

func compareMakefiles(p, baseName string, base, head makefile) []verify.Finding {
	names := make([]string, 0, len(base.rules))
	for name := range base.rules {
		names = append(names, name)
	}
	sort.Strings(names)

	var out []verify.Finding
	report := func(line int, format string, args ...any) {
		out = append(out, verify.Finding{
			Code:    verify.FindingTestInfra,
			Path:    p,
			Line:    line,
			Message: fmt.Sprintf(format, args...),
		})
	}
	where := ""
	if baseName != p {
		where = " (" + p + " now takes precedence over " + baseName + ")"
	}
	for _, name := range names {
		b, h := base.rules[name], head.rules[name]
		if !isTestTarget(name, b) && (h == nil || !isTestTarget(name, h)) {
			continue
		}
		switch {
		case h == nil:
			report(0, "Makefile test target %q deleted (line %d on base)%s", name, b.line, where)
		case !slices.Equal(b.recipe, h.recipe):
			report(h.line, "Makefile test target %q: recipe changed%s", name, where)
		case !slices.Equal(b.deps, h.deps):
			report(h.line, "Makefile test target %q: prerequisites changed%s", name, where)
		case base.phony[name] && !head.phony[name]:
			report(h.line, "Makefile test target %q is no longer .PHONY: a file named %q would make it do nothing%s", name, name, where)
		default:
			for _, v := range referencedVars(b, base) {
				if !slices.Equal(base.vars[v], head.vars[v]) {
					report(h.line, "Makefile test target %q: variable %s it uses changed%s", name, v, where)
				}
			}
		}
	}
	return out
}

// testRecipe matches the commands of the test runners bcode knows about,
// including `$(GO) test`.
var testRecipe = regexp.MustCompile(`(?i)(?:\bgo|\$[({]GO[)}])\s+test\b|\bpytest\b|\btox\b|\bnox\b`)

func isTestTarget(name string, r *makeRule) bool {
	lower := strings.ToLower(name)
	if strings.Contains(lower, "test") || strings.Contains(lower, "check") {
		return true
	}
	for _, line := range r.recipe {
		if testRecipe.MatchString(line) {
			return true
		}
	}
	return false
}

var varRef = regexp.MustCompile(`\$[({]([A-Za-z0-9_.-]+)[)}]`)

// referencedVars lists the variables a rule's prerequisites and recipe use,
// following variables that refer to others, so a test recipe cannot be
// weakened through the flags it expands.
func referencedVars(r *makeRule, mf makefile) []string {
	seen := map[string]bool{}
	var queue []string
	add := func(text string) {
		for _, m := range varRef.FindAllStringSubmatch(text, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				queue = append(queue, m[1])
			}
		}
	}
	for _, s := range r.deps {
		add(s)
	}
	for _, s := range r.recipe {
		add(s)
	}
	for i := 0; i < len(queue); i++ {
		for _, v := range mf.vars[queue[i]] {
			add(v)
		}
	}
	sort.Strings(queue)
	return queue
}

// logicalLine is a makefile line with its backslash continuations joined.
type logicalLine struct {
	text string
	line int // 1-based number of its first physical line
}

func logicalLines(src []byte) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	physical := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	for i, l := range physical {
		if cur.Len() == 0 {
			start = i + 1
		}
		if trailingBackslashes(l)%2 == 1 {
			cur.WriteString(l[:len(l)-1])
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		out = append(out, logicalLine{text: cur.String(), line: start})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, logicalLine{text: cur.String(), line: start})
	}
	return out
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// parseMakefile reads rules, .PHONY and variable assignments. It is not a
// make implementation: it reads what a change to test targets can alter and
// ignores the rest (conditionals are read as if every branch were taken).
func parseMakefile(src []byte) makefile {
	mf := makefile{rules: map[string]*makeRule{}, phony: map[string]bool{}, vars: map[string][]string{}}
	// current holds the rules of the last rule line; fresh marks those whose
	// recipe has not started yet, since a later recipe for the same target
	// replaces an earlier one in make.
	var current []*makeRule
	fresh := map[*makeRule]bool{}
	inDefine := ""
	for _, ll := range logicalLines(src) {
		text := ll.text
		if inDefine != "" {
			if firstWord(text) == "endef" {
				mf.vars[inDefine] = append(mf.vars[inDefine], "define")
				inDefine = ""
			} else {
				mf.vars[inDefine] = append(mf.vars[inDefine], text)
			}
			continue
		}
		if strings.HasPrefix(text, "\t") {
			line := strings.TrimRight(text[1:], " \t")
			for _, r := range current {
				if fresh[r] {
					r.recipe, fresh[r] = nil, false
				}
				r.recipe = append(r.recipe, line)
			}
			continue
		}
		text = strings.TrimSpace(stripComment(text))
		if text == "" {
			continue // blank and comment lines do not end a recipe
		}
		switch firstWord(text) {
		case "ifeq", "ifneq", "ifdef", "ifndef", "else", "endif":
			continue
		case "define":
			inDefine = strings.TrimSpace(strings.TrimPrefix(text, "define"))
			if name, _, ok := strings.Cut(inDefine, " "); ok {
				inDefine = name
			}
			mf.vars[inDefine] = nil
			current = nil
			continue
		case "include", "-include", "sinclude", "vpath", "unexport":
			current = nil
			continue
		}
		if name, value, ok := assignment(text); ok {
			mf.vars[name] = append(mf.vars[name], value)
			current = nil
			continue
		}
		targets, rest, ok := ruleLine(text)
		if !ok {
			current = nil
			continue
		}
		deps, inline, hasInline := strings.Cut(rest, ";")
		current = nil
		for _, t := range targets {
			if t == ".PHONY" {
				for _, d := range strings.Fields(deps) {
					mf.phony[d] = true
				}
				continue
			}
			r := mf.rules[t]
			if r == nil {
				r = &makeRule{line: ll.line}
				mf.rules[t] = r
			}
			r.deps = append(r.deps, strings.Fields(deps)...)
			fresh[r] = true
			if hasInline {
				r.recipe, fresh[r] = []string{strings.TrimSpace(inline)}, false
			}
			current = append(current, r)
		}
	}
	return mf
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// stripComment cuts a line at its first unescaped '#'.
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && (i == 0 || s[i-1] != '\\') {
			return s[:i]
		}
	}
	return s
}

// assignment recognizes `NAME = v`, `:=`, `::=`, `:::=`, `?=`, `+=`, `!=`,
// optionally after `export` or `override`. It returns the operator with the
// value, so `+= x` and `= x` compare as different.
func assignment(s string) (name, value string, ok bool) {
	for _, prefix := range []string{"export ", "override "} {
		s = strings.TrimPrefix(s, prefix)
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case ':', '=':
			if depth > 0 {
				continue
			}
			if c == ':' {
				// A colon starts an assignment only as ":=", "::=" or ":::=".
				j := i
				for j < len(s) && s[j] == ':' {
					j++
				}
				if j < len(s) && s[j] == '=' && j-i <= 3 {
					return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:]), true
				}
				return "", "", false
			}
			opStart := i
			if i > 0 && strings.IndexByte("?+!", s[i-1]) >= 0 {
				opStart = i - 1
			}
			name = strings.TrimSpace(s[:opStart])
			if name == "" || strings.ContainsAny(name, " \t") {
				return "", "", false
			}
			return name, strings.TrimSpace(s[opStart:]), true
		}
	}
	return "", "", false
}

// ruleLine splits `targets: prerequisites` (or `::`) at the first colon
// outside a variable reference.
func ruleLine(s string) (targets []string, rest string, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case ':':
			if depth > 0 {
				continue
			}
			targets = strings.Fields(s[:i])
			if len(targets) == 0 {
				return nil, "", false
			}
			return targets, strings.TrimPrefix(s[i+1:], ":"), true
		}
	}
	return nil, "", false
}
