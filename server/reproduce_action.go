package server

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// reproduceAction offers "Fix this failing test" on a test function (the
// cursor or a diagnostic inside it): a task whose --reproduce command
// runs that test by ID, so the task reproduces the failure on the base
// before any model call and pins the test as its oracle. With a
// diagnostic on the test it is a quick fix carrying it.
func (s *Server) reproduceAction(acts *codeActions, abs, rel string, p *lsp.CodeActionParams) {
	text, err := s.text(abs)
	if err != nil {
		return
	}
	lines := strings.Split(text, "\n")
	var diags []lsp.Diagnostic
	for _, d := range p.Diagnostics {
		if _, ok := testAt(rel, lines, int(d.Range.Start.Line)); ok {
			diags = append(diags, d)
		}
	}
	line := int(p.Range.Start.Line)
	if len(diags) > 0 {
		line = int(diags[0].Range.Start.Line)
	}
	cmd, ok := testAt(rel, lines, line)
	if !ok {
		return
	}
	kind := lsp.KindRefactor
	if len(diags) > 0 {
		kind = lsp.KindQuickFix
	}
	acts.add(kind, diags, command.New(command.TitleFixFailingTest, command.TaskCreate, command.TaskCreateArgs{Reproduce: cmd, Run: true}))
}

var (
	safePath   = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)
	goTestFunc = regexp.MustCompile(`^func (Test\w*)\(\w+ \*testing\.T\)`)
	pyTestFunc = regexp.MustCompile(`^(\s*)(?:async\s+)?def (test\w*)\(`)
	pyClass    = regexp.MustCompile(`^class (Test\w*)\b`)
	pyAnyFunc  = regexp.MustCompile(`^\s*(?:async\s+)?def \w+\(`)
)

// testAt is the --reproduce command of the test function that holds line
// (0-based) of the test file rel, if it is in one.
func testAt(rel string, lines []string, line int) (string, bool) {
	if !safePath.MatchString(rel) || line < 0 || line >= len(lines) {
		return "", false
	}
	base := path.Base(rel)
	switch {
	case strings.HasSuffix(base, "_test.go"):
		name, ok := goTestAt(lines, line)
		if !ok {
			return "", false
		}
		pkg := "./" + path.Dir(rel)
		if path.Dir(rel) == "." {
			pkg = "."
		}
		return fmt.Sprintf("go test %s -run '^%s$'", pkg, name), true
	case strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")):
		name, ok := pyTestAt(lines, line)
		if !ok {
			return "", false
		}
		return fmt.Sprintf("python3 -m pytest %s::%s", rel, name), true
	}
	return "", false
}

// goTestAt is the Test function whose body holds line: the nearest func
// line above it, with no closing brace of another function between.
func goTestAt(lines []string, line int) (string, bool) {
	for i := line; i >= 0; i-- {
		if m := goTestFunc.FindStringSubmatch(lines[i]); m != nil {
			return m[1], true
		}
		if strings.HasPrefix(lines[i], "func ") || (i < line && strings.HasPrefix(lines[i], "}")) {
			return "", false
		}
	}
	return "", false
}

// pyTestAt is the pytest name of the test function that holds line: a
// top-level test_ function, or Class::test_ for a method of a Test class.
func pyTestAt(lines []string, line int) (string, bool) {
	for i := line; i >= 0; i-- {
		if m := pyTestFunc.FindStringSubmatch(lines[i]); m != nil {
			if m[1] == "" {
				return m[2], true
			}
			for j := i - 1; j >= 0; j-- {
				if c := pyClass.FindStringSubmatch(lines[j]); c != nil {
					return c[1] + "::" + m[2], true
				}
				if topLevel(lines[j]) {
					return "", false
				}
			}
			return "", false
		}
		if (i < line && topLevel(lines[i])) || pyAnyFunc.MatchString(lines[i]) {
			return "", false
		}
	}
	return "", false
}

// topLevel reports whether a Python line starts a top-level statement.
func topLevel(l string) bool {
	return l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && l[0] != '@' && l[0] != ')'
}
