package tamper

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// attrMaxLine is git's ATTR_MAX_LINE_LENGTH (attr.h, 2.39.1 and later): a
// line this long or longer is skipped with a warning, and reading goes on.
// Older git applies it; both are findings here.
const attrMaxLine = 2048

// attrMacroPrefix starts a macro definition line.
const attrMacroPrefix = "[attr]"

// attrState is one "attr", "-attr", "!attr" or "attr=value" of a line.
type attrState struct {
	name  string
	kind  byte // '+' set, '-' unset, '!' unspecified, '=' a value
	value string
}

func (s attrState) String() string {
	switch s.kind {
	case '+':
		return s.name
	case '=':
		return s.name + "=" + s.value
	}
	return string(s.kind) + s.name
}

// attrLine is one line of a .gitattributes file that git keeps.
type attrLine struct {
	line    int
	text    string // the line, for messages
	long    bool   // at least attrMaxLine bytes: git 2.39.1+ skips it
	macro   string // the macro a definition line defines
	isMacro bool
	states  []attrState
}

// parseAttributes reads a .gitattributes file as git's attr.c does (2.39:
// parse_attr_line, read_attr_from_file and read_attr_from_index), with no
// cap on a line's length: each line is cut at its first NUL (git handles
// lines as C strings), the first line loses a UTF-8 byte-order mark, blank
// lines and comments are skipped, a pattern may be C-quoted, and a line
// with an invalid attribute name or a negative pattern is dropped whole
// (git ignores it). Macro lines are kept wherever they are; only the top
// level's count (see judgeAttributes).
func parseAttributes(r io.Reader) ([]attrLine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []attrLine
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if len(raw) == 0 && err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		raw = bytes.TrimSuffix(raw, []byte("\n"))
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		if n == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
		}
		if l, ok := parseAttrLine(string(raw)); ok {
			l.line = n
			out = append(out, l)
		}
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
	}
}

const attrBlank = " \t\r\n"

func skipBlank(s string) string { return strings.TrimLeft(s, attrBlank) }

func tokenEnd(s string) int {
	if i := strings.IndexAny(s, attrBlank); i >= 0 {
		return i
	}
	return len(s)
}

// parseAttrLine is git's parse_attr_line: ok is false for a line git
// ignores.
func parseAttrLine(line string) (attrLine, bool) {
	cp := skipBlank(line)
	if cp == "" || cp[0] == '#' {
		return attrLine{}, false
	}
	l := attrLine{text: strings.TrimRight(cp, attrBlank), long: len(line) >= attrMaxLine}
	var name, states string
	if unq, rest, ok := unquoteC(cp); ok {
		name, states = unq, rest
	} else {
		n := tokenEnd(cp)
		name, states = cp[:n], cp[n:]
	}
	if len(name) > len(attrMacroPrefix) && strings.HasPrefix(name, attrMacroPrefix) {
		m := skipBlank(name[len(attrMacroPrefix):])
		m = m[:tokenEnd(m)]
		if !attrNameValid(m) {
			return attrLine{}, false
		}
		l.isMacro, l.macro = true, m
	} else if strings.HasPrefix(name, "!") {
		return attrLine{}, false // "Negative patterns are ignored in git attributes"
	}
	for cp := skipBlank(states); cp != ""; {
		s, rest, ok := parseAttrState(cp)
		if !ok {
			return attrLine{}, false // git drops the whole line
		}
		l.states = append(l.states, s)
		cp = rest
	}
	return l, true
}

// parseAttrState is git's parse_attr: the token up to a blank, its name
// up to an "=" inside it.
func parseAttrState(cp string) (attrState, string, bool) {
	ep := tokenEnd(cp)
	tok := cp[:ep]
	var s attrState
	name := tok
	if i := strings.IndexByte(tok, '='); i >= 0 {
		name, s.kind, s.value = tok[:i], '=', tok[i+1:]
	} else {
		s.kind = '+'
	}
	if name != "" && (name[0] == '-' || name[0] == '!') {
		s.kind, s.value = name[0], ""
		name = name[1:]
	}
	if !attrNameValid(name) {
		return attrState{}, "", false
	}
	s.name = name
	return s, skipBlank(cp[ep:]), true
}

// attrNameValid is git's attr_name_valid.
func attrNameValid(name string) bool {
	if name == "" || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '-' && c != '.' && c != '_' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// unquoteC is git's unquote_c_style on a string starting with '"': the
// unquoted text and what follows the closing quote, or ok false when git
// would not take it as quoted (then the pattern is the raw token).
func unquoteC(s string) (string, string, bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			i++
			if i >= len(s) {
				return "", "", false
			}
			switch e := s[i]; e {
			case '"', '\\':
				b.WriteByte(e)
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '0', '1', '2', '3':
				if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
					return "", "", false
				}
				b.WriteByte((e-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
			default:
				return "", "", false
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// builtinMacros is git's builtin_attr: the one macro every repository has.
var builtinMacros = map[string][]attrState{
	"binary": {{name: "diff", kind: '-'}, {name: "merge", kind: '-'}, {name: "text", kind: '-'}},
}

// builtinDiff are the diff drivers git implements itself (userdiff.c,
// 2.39): they set a function-name pattern and run no program unless the
// user configured one under that name.
var builtinDiff = map[string]bool{"ada": true, "bash": true, "bibtex": true, "cpp": true, "csharp": true, "css": true,
	"dts": true, "elixir": true, "fortran": true, "fountain": true, "golang": true, "html": true, "java": true,
	"kotlin": true, "markdown": true, "matlab": true, "objc": true, "pascal": true, "perl": true, "php": true,
	"python": true, "ruby": true, "rust": true, "scheme": true, "tex": true}

// judgeAttributes reports every line of every .gitattributes of the tree
// that git keeps and that, with macros expanded (the top level's
// definitions over git's builtin "binary"), selects a driver, changes the
// bytes git writes, or hides content from git diff.
func (ix *treeIndex) judgeAttributes() []keyed {
	macros := map[string][]attrState{}
	for k, v := range builtinMacros {
		macros[k] = v
	}
	for _, p := range ix.order {
		if !strings.Contains(p, "/") && ix.attrs[p] != nil {
			for _, l := range ix.attrs[p] {
				if l.isMacro {
					macros[l.macro] = l.states // a later definition wins, as in git
				}
			}
		}
	}
	var out []keyed
	for _, p := range ix.order {
		lines, ok := ix.attrs[p]
		if !ok {
			continue
		}
		top := !strings.Contains(p, "/")
		for _, l := range lines {
			if l.isMacro && !top {
				continue // "[attr]… not allowed" below the top level
			}
			out = append(out, judgeAttrLine(p, l, expand(l.states, macros))...)
		}
	}
	return out
}

// expand adds what set macros set, recursively.
func expand(states []attrState, macros map[string][]attrState) []attrState {
	var out []attrState
	seen := map[string]bool{}
	var walk func([]attrState)
	walk = func(ss []attrState) {
		for _, s := range ss {
			out = append(out, s)
			if m, ok := macros[s.name]; ok && s.kind == '+' && !seen[s.name] {
				seen[s.name] = true
				walk(m)
			}
		}
	}
	walk(states)
	return out
}

// judgeAttrLine sorts a line's expanded states into the three findings.
func judgeAttrLine(p string, l attrLine, states []attrState) []keyed {
	var driver, content, hides []string
	for _, s := range states {
		switch {
		case s.name == "filter" && s.kind == '=',
			s.name == "diff" && s.kind == '=' && !builtinDiff[s.value],
			s.name == "merge" && s.kind == '=' && s.value != "text" && s.value != "binary" && s.value != "union":
			driver = append(driver, s.String())
		case s.name == "merge" && s.kind == '=' && s.value == "union", // both sides kept, no conflict shown
			(s.name == "text" || s.name == "crlf") && (s.kind == '+' || s.kind == '='),
			(s.name == "eol" || s.name == "working-tree-encoding") && s.kind == '=',
			(s.name == "ident" || s.name == "export-subst") && s.kind == '+':
			content = append(content, s.String())
		case s.name == "diff" && s.kind == '-':
			hides = append(hides, s.String())
		}
	}
	what := "line"
	if l.isMacro {
		what = "macro " + l.macro + " defined on line"
	}
	quoted := fmt.Sprintf("%s %q", what, clip(l.text, 120))
	if l.long {
		quoted += fmt.Sprintf(" (%d bytes or more: git 2.39.1 and later skip it, older git applies it)", attrMaxLine)
	}
	var out []keyed
	if len(driver) > 0 {
		out = append(out, finding(FindingAttributesDriver, p, l.line, fmt.Sprintf("%s sets %s: git runs whatever program a configuration names for that driver", quoted, strings.Join(driver, " "))))
	}
	if len(content) > 0 {
		out = append(out, finding(FindingAttributesContent, p, l.line, fmt.Sprintf("%s sets %s: git converts the bytes it writes, so the checkout differs from the diff", quoted, strings.Join(content, " "))))
	}
	if len(hides) > 0 {
		out = append(out, finding(FindingAttributesBinary, p, l.line, fmt.Sprintf("%s sets %s: git diff shows the files it matches as \"Binary files differ\", hiding their content", quoted, strings.Join(hides, " "))))
	}
	return out
}

// isAttributesFile: a name git opens as .gitattributes on some file
// system (any letter case, trailing dots or spaces, an NTFS stream, an
// 8.3 short name, HFS+ ignorable code points).
func isAttributesFile(name string) bool { return isDotFile(name, "gitattributes", "gi7d29") }

// isModulesFile: likewise for .gitmodules.
func isModulesFile(name string) bool { return isDotFile(name, "gitmodules", "gi7eba") }

// isDotFile is git's is_ntfs_dot_generic and is_hfs_dot_generic together:
// name is "."+want on a case-insensitive file system that drops trailing
// dots and spaces (and anything from an NTFS ":stream"), or its 8.3 short
// name: the first six letters of want, or the hash prefix, then "~1".."~4".
func isDotFile(name, want, short string) bool {
	n := strings.ToLower(stripIgnorable(name))
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	if n == "."+want {
		return true
	}
	if len(n) == 8 && n[6] == '~' && n[7] >= '1' && n[7] <= '4' {
		return n[:6] == want[:6] || (short != "" && n[:6] == short)
	}
	return false
}

// isDotGit: a path component git treats as its own directory on some file
// system (git's is_hfs_dotgit and is_ntfs_dotgit).
func isDotGit(c string) bool {
	n := strings.ToLower(stripIgnorable(c))
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	return n == ".git" || n == "git~1"
}

// stripIgnorable drops the code points HFS+ ignores in names (git's
// next_hfs_char).
func stripIgnorable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, s)
}
