package python

import (
	"reflect"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

func TestTargets(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"src/pkg/__init__.py":        "",
		"src/pkg/mod.py":             "def f():\n    return 1\n",
		"src/pkg/other.py":           "def g():\n    return 2\n",
		"src/pkg/facade.py":          "from .mod import f\n",
		"tests/__init__.py":          "",
		"tests/helpers.py":           "from pkg.facade import f\n",
		"tests/test_direct.py":       "import pkg.mod\n\ndef test_f():\n    assert pkg.mod.f() == 1\n",
		"tests/test_from.py":         "from pkg import mod\n\ndef test_f():\n    assert mod.f() == 1\n",
		"tests/test_via.py":          "from . import helpers\n\ndef test_f():\n    assert helpers.f() == 1\n",
		"tests/test_other.py":        "from pkg.other import g\n\ndef test_g():\n    assert g() == 2\n",
		"tests/test_nothing.py":      "import json\n\ndef test_json():\n    assert json.loads('1') == 1\n",
		"tests/sub/conftest.py":      "import pytest\n",
		"tests/sub/test_fx.py":       "def test_fx():\n    pass\n",
		"tests/test_changed.py":      "def test_new():\n    pass\n",
		".venv/lib/test_vendored.py": "import pkg.mod\n",
	})
	a := shared
	cases := []struct {
		name    string
		changed []string
		want    []string
	}{
		{"module change reaches importers, directly and through other modules",
			[]string{"src/pkg/mod.py", "tests/test_changed.py"},
			[]string{"tests/test_changed.py", "tests/test_direct.py", "tests/test_from.py", "tests/test_via.py"}},
		{"a module only one test imports",
			[]string{"src/pkg/other.py"},
			[]string{"tests/test_other.py"}},
		{"conftest reaches the tests below it",
			[]string{"tests/sub/conftest.py"},
			[]string{"tests/sub/test_fx.py"}},
		{"pytest configuration reaches everything",
			[]string{"pytest.ini"},
			[]string{"tests/sub/test_fx.py", "tests/test_changed.py", "tests/test_direct.py", "tests/test_from.py", "tests/test_nothing.py", "tests/test_other.py", "tests/test_via.py"}},
		{"no python change",
			[]string{"README.md"},
			[]string{}},
	}
	for _, c := range cases {
		change := &verify.Change{}
		for _, p := range c.changed {
			change.Files = append(change.Files, verify.FileChange{Path: p, Status: verify.Modified, Base: []byte("x"), Head: []byte("y")})
		}
		got, err := a.Targets(ctx(t), runner, dir, change)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestImportedNames(t *testing.T) {
	t.Parallel()
	imps := []pyImport{
		{Module: "a.b", Level: 0},
		{Module: "pkg", Names: []string{"mod", "*"}},
		{Module: "", Names: []string{"helpers"}, Level: 1},
		{Module: "util", Names: []string{"x"}, Level: 2},
		{Module: "far", Level: 5},
	}
	got := importedNames("tests/unit/test_a.py", imps)
	want := []string{"a.b", "pkg", "pkg.mod", "tests.unit", "tests.unit.helpers", "tests.util", "tests.util.x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
