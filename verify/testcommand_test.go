package verify

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseTestCommand(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want []Test
	}{
		{"go test ./calc -run TestAbs", []Test{{Language: "go", Package: "./calc", Name: "TestAbs"}}},
		{"go test -v -run='^TestAbs$' ./calc ./x/y/", []Test{{Language: "go", Package: "./calc", Name: "^TestAbs$"}, {Language: "go", Package: "./x/y", Name: "^TestAbs$"}}},
		{"go test -run ^TestAbs$ -count 1 .", []Test{{Language: "go", Package: ".", Name: "^TestAbs$"}}},
		// A $ before a closing quote or a tab is no expansion to a shell either.
		{"go test -run \"^TestAbs$\" ./calc", []Test{{Language: "go", Package: "./calc", Name: "^TestAbs$"}}},
		{"go test -run ^TestAbs$\t./calc", []Test{{Language: "go", Package: "./calc", Name: "^TestAbs$"}}},
		{`go test ./calc -run "TestA|TestB/neg"`, []Test{{Language: "go", Package: "./calc", Name: "TestA|TestB/neg"}}},
		{"go test", []Test{{Language: "go", Package: ".", Name: "."}}},
		{"python3 -m pytest tests/test_calc.py::test_neg", []Test{{Language: "python", Package: "tests/test_calc.py", File: "tests/test_calc.py", Name: "test_neg"}}},
		{"pytest -q tests/test_calc.py tests/t.py::TestC::test_y[1]", []Test{{Language: "python", Package: "tests/test_calc.py", File: "tests/test_calc.py"}, {Language: "python", Package: "tests/t.py", File: "tests/t.py", Name: "TestC::test_y[1]"}}},
		{"python -m pytest './tests/test_calc.py::test_neg'", []Test{{Language: "python", Package: "tests/test_calc.py", File: "tests/test_calc.py", Name: "test_neg"}}},
	} {
		got, err := ParseTestCommand(c.cmd)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.cmd, got, err, c.want)
		}
	}
	for _, c := range []struct{ cmd, says string }{
		{"make test", "not a test command"},
		{"", "not a test command"},
		{"go test ./... -run TestX", "package pattern"},
		{"go test ./calc -run TestX && rm -rf /", `'&'`},
		{"go test ./calc; echo", `';'`},
		{"go test ./calc -run $(id)", `'$'`},
		{"go test ./calc -run \"$HOME\"", "bcode runs no shell"},
		{"go test ./calc -run ^Test$X", "bcode runs no shell"},
		{"go test ./calc -run \"^T${X}\"", "bcode runs no shell"},
		{"GOFLAGS=-x go test ./calc", "sets the environment"},
		{"go test -tags slow ./calc", "flag -tags"},
		{"go test calc", "./calc"},
		{"go test ../other", "outside the repository"},
		{"go test ./calc -run", "needs a value"},
		{"go test ./calc -run '('", "-run"},
		{"go test ./calc -run 'TestX", "unclosed"},
		{"python3 -m pytest -k neg tests/test_calc.py", "option -k"},
		{"pytest tests/", "name a test file"},
		{"pytest /etc/passwd.py", "inside the repository"},
		{"pytest", "no test file"},
		{"python3 tests/test_calc.py", "not a test command"},
	} {
		_, err := ParseTestCommand(c.cmd)
		if !errors.Is(err, ErrTestCommand) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v; want ErrTestCommand saying %q", c.cmd, err, c.says)
		}
	}
}

func TestMatchGoRun(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{"TestAbs", "TestAbs", true},
		{"TestAbs", "TestAbsolute", true},
		{"^TestAbs$", "TestAbsolute", false},
		{"^TestAbs$", "TestAbs/neg", true},
		{"TestAbs/neg", "TestAbs/pos", false},
		{"TestAbs/neg", "TestAbs/negative", true},
		{"TestAbs/neg", "TestAbs", true},
		{"Test[A/]bs", "TestAbs", true},
		{".", "TestX", true},
	} {
		if got := matchGoRun(c.pat, c.name); got != c.want {
			t.Errorf("-run %q on %s: %v, want %v", c.pat, c.name, got, c.want)
		}
	}
}

// TestSelectedSubtests: -run TestX/neg selects the subtest, not its parent,
// whose outcome on the base covers every subtest; -run TestX selects the
// test and its subtests.
func TestSelectedSubtests(t *testing.T) {
	sub := []Test{{Language: "go", Package: ".", Name: "^TestX$/^neg$"}}
	top := []Test{{Language: "go", Package: ".", Name: "^TestX$"}}
	for _, c := range []struct {
		sels []Test
		name string
		want bool
	}{
		{sub, "TestX", false}, {sub, "TestX/neg", true}, {sub, "TestX/pos", false},
		{top, "TestX", true}, {top, "TestX/neg", true}, {top, "TestXY", false},
	} {
		if got := selected(c.sels, Test{Language: "go", Package: ".", Name: c.name}); got != c.want {
			t.Errorf("selected(%s, %s) = %v, want %v", c.sels[0].Name, c.name, got, c.want)
		}
	}
}
