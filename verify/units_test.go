package verify

import (
	"slices"
	"strings"
	"testing"
)

func TestSupportUnits(t *testing.T) {
	tests := []string{"a/test_x.py", "a/b/test_y.py", "c/test_z.py", "test_top.py"}
	isTest := func(p string) bool { return strings.Contains(p, "test_") }
	for _, c := range []struct {
		name    string
		support []string
		want    []string
	}{
		{"a changed test file is its own unit", []string{"a/test_x.py"}, []string{"a/test_x.py"}},
		{"a test file gone from this side is none", []string{"a/test_gone.py"}, []string{}},
		{"a helper reaches the tests below its directory", []string{"a/helpers.py"}, []string{"a/b/test_y.py", "a/test_x.py"}},
		{"a helper with no test below reaches the nearest directory above that has some", []string{"c/d/e/data.json"}, []string{"c/test_z.py"}},
		{"a root helper reaches every test", []string{"conftest.py"}, tests},
	} {
		got := SupportUnits(tests, c.support, isTest)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", c.name, got, want)
		}
	}
}
