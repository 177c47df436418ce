package python

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

func names(ts []verify.Test) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.File+"::"+t.Name)
	}
	return out
}

func TestChangedTests(t *testing.T) {
	t.Parallel()
	needPython(t)
	base := `
		import pytest
		import mod

		def test_same():
		    assert mod.f(1) == 1

		def test_modified():
		    assert mod.f(2) == 2

		def test_comment_only():
		    # a comment
		    assert mod.f(3) == 3

		def test_decorated():
		    assert True

		class TestC:
		    def test_m(self):
		        assert True

		    def test_kept(self):
		        assert True

		    class TestInner:
		        def test_deep(self):
		            assert True

		class TestWithInit:
		    def __init__(self):
		        pass

		    def test_never_collected(self):
		        pass

		def helper():
		    return 1
		`
	head := `
		import pytest
		import mod


		def test_same():
		    assert mod.f(1) == 1

		def test_modified():
		    assert mod.f(2) == 3

		def test_comment_only():
		    # the comment changed, and the test moved down a line
		    assert mod.f(3) == 3  # trailing too

		@pytest.mark.parametrize("x", [1, 2])
		def test_decorated(x):
		    assert True

		class TestC:
		    def test_m(self):
		        assert 1 == 1

		    def test_kept(self):
		        assert True

		    class TestInner:
		        def test_deep(self):
		            assert False

		class TestWithInit:
		    def __init__(self):
		        pass

		    def test_never_collected(self):
		        assert False

		def test_new():
		    assert mod.g() == 1

		async def test_async_new():
		    assert True

		def helper():
		    return 2
		`
	newFile := `
		def test_in_new_file():
		    pass

		def not_a_test():
		    pass
		`
	change := &verify.Change{Files: []verify.FileChange{
		fileChange("tests/test_mod.py", &base, &head),
		fileChange("tests/new_test.py", nil, &newFile),
		fileChange("tests/test_gone.py", str("def test_x():\n    pass\n"), nil),
		fileChange("mod.py", str("def f(x): return x\n"), str("def f(x): return x\ndef g(): return 1\n")),
		fileChange("tests/conftest.py", nil, str("def test_in_conftest(): pass\n")),
	}}
	got, err := shared.ChangedTests(ctx(t), change)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tests/new_test.py::test_in_new_file",
		"tests/test_mod.py::test_modified",
		"tests/test_mod.py::test_decorated",
		"tests/test_mod.py::TestC::test_m",
		"tests/test_mod.py::TestC::TestInner::test_deep",
		"tests/test_mod.py::test_new",
		"tests/test_mod.py::test_async_new",
	}
	if !reflect.DeepEqual(names(got), want) {
		t.Errorf("changed tests:\n got %q\nwant %q", names(got), want)
	}
	for _, tt := range got {
		if tt.Language != "python" || tt.Package != tt.File {
			t.Errorf("%+v: want language python and package = file", tt)
		}
	}
}

func TestChangedTestsSyntaxError(t *testing.T) {
	t.Parallel()
	needPython(t)
	change := &verify.Change{Files: []verify.FileChange{
		fileChange("tests/test_bad.py", str("def test_a():\n    pass\n"), str("def test_a():\n    pass\n\ndef test_b(:\n    pass\n")),
	}}
	_, err := shared.ChangedTests(ctx(t), change)
	if err == nil || !strings.Contains(err.Error(), "tests/test_bad.py:4") {
		t.Fatalf("want an error naming tests/test_bad.py:4, got %v", err)
	}
}

func TestChangedTestsBaseSyntaxErrorCountsAsNew(t *testing.T) {
	t.Parallel()
	needPython(t)
	change := &verify.Change{Files: []verify.FileChange{
		fileChange("test_fix.py", str("def test_a(:\n"), str("def test_a():\n    pass\n")),
	}}
	got, err := shared.ChangedTests(ctx(t), change)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names(got), []string{"test_fix.py::test_a"}) {
		t.Fatalf("got %q", names(got))
	}
}

func TestOwnsAndIsTestFile(t *testing.T) {
	t.Parallel()
	a := New("")
	for p, want := range map[string][2]bool{
		"pkg/mod.py":         {true, false},
		"tests/test_mod.py":  {true, true},
		"tests/mod_test.py":  {true, true},
		"tests/conftest.py":  {true, false},
		"pytest.ini":         {true, false},
		"sub/tox.ini":        {true, false},
		"setup.cfg":          {true, false},
		"pyproject.toml":     {true, false},
		".coveragerc":        {true, false},
		"main.go":            {false, false},
		"tests/testdata.txt": {false, false},
		"tests/test_x.pyc":   {false, false},
		"tests/testing.py":   {true, false},
	} {
		if a.Owns(p) != want[0] || a.IsTestFile(p) != want[1] {
			t.Errorf("%s: Owns=%v IsTestFile=%v, want %v", p, a.Owns(p), a.IsTestFile(p), want)
		}
	}
	if a.Language() != "python" {
		t.Errorf("Language() = %q", a.Language())
	}
}
