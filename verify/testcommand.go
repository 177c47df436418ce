package verify

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// ErrTestCommand: a --reproduce command bcode cannot map to test IDs of
// a language it supports. The command is never run as given (no shell):
// it is read as a test selection the adapters run their own way.
var ErrTestCommand = errors.New("reproduce")

// ParseTestCommand reads a test command (`go test ./pkg -run TestX`,
// `python3 -m pytest tests/test_calc.py::test_x`, `pytest tests/t.py`)
// into selectors for Gate.Reproduce. Anything it cannot map exactly (a
// shell operator, an environment assignment, a flag that changes how the
// tests build or which run, a package pattern, a directory) is refused
// with ErrTestCommand and what to write instead.
func ParseTestCommand(cmd string) ([]Test, error) {
	args, err := splitCommand(cmd)
	if err != nil {
		return nil, err
	}
	switch {
	case len(args) >= 2 && args[0] == "go" && args[1] == "test":
		return parseGoTest(args[2:])
	case len(args) >= 1 && (args[0] == "pytest" || args[0] == "py.test"):
		return parsePytest(args[1:])
	case len(args) >= 3 && pythonName.MatchString(args[0]) && args[1] == "-m" && args[2] == "pytest":
		return parsePytest(args[3:])
	}
	return nil, fmt.Errorf("%w: %q is not a test command bcode can run by test ID: use `go test ./pkg -run TestName` or `python3 -m pytest path/test_file.py::test_name`", ErrTestCommand, cmd)
}

var pythonName = regexp.MustCompile(`^python(3(\.\d+)?)?$`)

// splitCommand splits cmd into words as a POSIX shell would for plain
// words and quotes, and refuses what only a shell would do with it.
func splitCommand(cmd string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			cur.WriteByte(c)
		case quote == '"' && c == '\\' && i+1 < len(cmd) && strings.IndexByte("\"\\$`", cmd[i+1]) >= 0:
			i++
			cur.WriteByte(cmd[i])
		case quote == '"' && c == '$' && !shellExpands(cmd, i):
			cur.WriteByte(c) // a pattern's end anchor ("^TestX$"): literal to a shell too
		case quote == '"' && (c == '$' || c == '`'):
			return nil, fmt.Errorf("%w: %q expands %c inside quotes: bcode runs no shell; write the value itself", ErrTestCommand, cmd, c)
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(cmd):
			i++
			cur.WriteByte(cmd[i])
			inWord = true
		case c == '$' && !shellExpands(cmd, i):
			// A pattern's end anchor (-run ^TestX$): literal to a shell too.
			cur.WriteByte(c)
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				args, inWord = append(args, cur.String()), false
				cur.Reset()
			}
		case strings.IndexByte("|&;<>()$`*?{}\n\r~", c) >= 0:
			return nil, fmt.Errorf("%w: %q uses %q: bcode runs no shell; give one test command, with test names and paths written out", ErrTestCommand, cmd, c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%w: %q has an unclosed %c quote", ErrTestCommand, cmd, quote)
	}
	if inWord {
		args = append(args, cur.String())
	}
	if len(args) > 0 && strings.Contains(args[0], "=") {
		return nil, fmt.Errorf("%w: %q sets the environment (%s): the sandbox decides the tests' environment; leave it out", ErrTestCommand, cmd, args[0])
	}
	return args, nil
}

// parseGoTest reads `go test` arguments: packages ("./pkg", "."), -run,
// and flags that do not change what runs (-v, -count, -json, -timeout).
func parseGoTest(args []string) ([]Test, error) {
	run := "."
	var pkgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
			p, err := goPackage(a)
			if err != nil {
				return nil, err
			}
			pkgs = append(pkgs, p)
		case name == "v" || name == "json" || name == "failfast":
		case name == "run" || name == "count" || name == "timeout":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("%w: go test %s needs a value", ErrTestCommand, a)
				}
				i++
				value = args[i]
			}
			if name == "run" {
				if _, err := regexp.Compile(value); err != nil {
					return nil, fmt.Errorf("%w: go test -run %q: %v", ErrTestCommand, value, err)
				}
				run = value
			}
		default:
			return nil, fmt.Errorf("%w: go test flag %s changes how the tests build or which run, and bcode runs them its own way: leave it out (supported: packages, -run, -v, -count, -timeout)", ErrTestCommand, a)
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	out := make([]Test, len(pkgs))
	for i, p := range pkgs {
		out[i] = Test{Language: "go", Package: p, Name: run}
	}
	return out, nil
}

// goPackage is a package argument as the Go adapter names units: "./dir"
// or ".", inside the repository.
func goPackage(a string) (string, error) {
	if strings.Contains(a, "...") {
		return "", fmt.Errorf("%w: %s is a package pattern: name the package whose test fails (./pkg)", ErrTestCommand, a)
	}
	if !strings.HasPrefix(a, ".") {
		return "", fmt.Errorf("%w: %s: name the package by its directory (./%s)", ErrTestCommand, a, a)
	}
	p := path.Clean(a)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%w: %s is outside the repository", ErrTestCommand, a)
	}
	if p == "." {
		return ".", nil
	}
	return "./" + p, nil
}

// parsePytest reads pytest arguments: test files and node IDs
// (file.py::name, file.py::Class::name, file.py::name[param]), and -q/-v.
func parsePytest(args []string) ([]Test, error) {
	var out []Test
	for _, a := range args {
		switch {
		case a == "-q" || a == "-v" || a == "-vv" || a == "-x" || a == "--quiet" || a == "--verbose":
			continue
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("%w: pytest option %s changes which tests run or how, and bcode runs them its own way: name the tests as node IDs (file.py::test_name) instead", ErrTestCommand, a)
		}
		file, name, _ := strings.Cut(a, "::")
		p := path.Clean(file)
		if !strings.HasSuffix(p, ".py") || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("%w: %s: name a test file inside the repository (tests/test_x.py) or a node ID (tests/test_x.py::test_y)", ErrTestCommand, a)
		}
		out = append(out, Test{Language: "python", Package: p, File: p, Name: name})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: pytest with no test file: name the failing test (tests/test_x.py::test_y)", ErrTestCommand)
	}
	return out, nil
}

// shellExpands reports whether the $ at i starts an expansion, as a POSIX
// shell decides: before a name's first character, a digit, one of the
// special parameters, { or (; anywhere else (a quote's end, a space, the
// end of the command) it is a plain $.
func shellExpands(cmd string, i int) bool {
	if i+1 >= len(cmd) {
		return false
	}
	c := cmd[i+1]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("{(@*#?$!-", c) >= 0
}
