package python

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

func findingsText(fs []verify.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s:%d %s\n", f.Code, f.Path, f.Line, f.Message)
	}
	return b.String()
}

func TestTamperTests(t *testing.T) {
	t.Parallel()
	needPython(t)
	base := `
		import pytest
		import unittest

		def test_deleted():
		    assert 1

		def test_moved():
		    assert 2

		def test_marker():
		    assert 3

		def test_imperative():
		    assert 4

		@pytest.mark.skipif(True, reason="old")
		def test_already_skipped():
		    assert 5

		def test_param_marks():
		    assert 6

		class TestK:
		    def test_m(self):
		        assert 7

		class TestU(unittest.TestCase):
		    def test_u(self):
		        self.assertTrue(True)

		    def test_u2(self):
		        self.assertTrue(True)
		`
	head := `
		import pytest
		import unittest
		from pytest import mark as m

		@pytest.mark.skip(reason="flaky")
		def test_marker():
		    assert 3

		def test_imperative():
		    if True:
		        pytest.skip("later")
		    assert 4

		@pytest.mark.skipif(True, reason="old")
		def test_already_skipped():
		    assert 5

		@m.parametrize("x", [1, pytest.param(2, marks=m.xfail)])
		def test_param_marks(x):
		    assert 6

		@pytest.mark.xfail
		class TestK:
		    def test_m(self):
		        assert 7

		class TestU(unittest.TestCase):
		    @unittest.skip("no")
		    def test_u(self):
		        self.assertTrue(True)

		    def test_u2(self):
		        self.skipTest("no")

		def test_brand_new_and_skipped():
		    pytest.skip("new tests hide nothing")
		`
	moduleBase := "def test_a():\n    pass\n"
	moduleHead := "import pytest\n\npytestmark = pytest.mark.skip(reason='all')\n\ndef test_a():\n    pass\n"
	change := &verify.Change{Files: []verify.FileChange{
		fileChange("tests/test_t.py", &base, &head),
		fileChange("tests/test_elsewhere.py", nil, str("def test_moved():\n    assert 2\n")),
		fileChange("tests/test_gone.py", str("def test_x():\n    pass\n\nclass TestG:\n    def test_y(self):\n        pass\n"), nil),
		fileChange("tests/test_module.py", &moduleBase, &moduleHead),
		fileChange("tests/test_cond.py", str("def test_c():\n    pass\n"), str("import pytest\nnp = pytest.importorskip('numpy')\n\ndef test_c():\n    pass\n")),
		fileChange("lib/code.py", str("def test_not_a_test_file(): pass\n"), nil),
	}}
	fs, err := shared.Tamper(ctx(t), change)
	if err != nil {
		t.Fatal(err)
	}
	text := findingsText(fs)
	want := []string{
		"test_deleted tests/test_gone.py:0 test tests/test_gone.py::test_x",
		"test_deleted tests/test_gone.py:0 test tests/test_gone.py::TestG::test_y",
		"test_deleted tests/test_t.py:0 test tests/test_t.py::test_deleted",
		"test_skipped tests/test_t.py:5 test tests/test_t.py::test_marker is newly skipped by pytest.mark.skip",
		"test_skipped tests/test_t.py:11 test tests/test_t.py::test_imperative is newly skipped by pytest.skip",
		"test_skipped tests/test_t.py:18 test tests/test_t.py::test_param_marks is newly skipped by pytest.mark.xfail",
		"test_skipped tests/test_t.py:22 every test of class tests/test_t.py::TestK is newly skipped by pytest.mark.xfail",
		"test_skipped tests/test_t.py:28 test tests/test_t.py::TestU::test_u is newly skipped by unittest.skip",
		"test_skipped tests/test_t.py:33 test tests/test_t.py::TestU::test_u2 is newly skipped by skipTest",
		"test_skipped tests/test_module.py:3 every test of tests/test_module.py is newly skipped by pytest.mark.skip",
		"test_skipped tests/test_cond.py:2 every test of tests/test_cond.py is newly skipped by pytest.importorskip",
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("missing finding %q", w)
		}
	}
	for _, not := range []string{"test_moved", "test_already_skipped", "test_brand_new", "lib/code.py"} {
		if strings.Contains(text, not) {
			t.Errorf("unexpected finding about %s", not)
		}
	}
	if len(fs) != len(want) {
		t.Errorf("got %d findings, want %d:\n%s", len(fs), len(want), text)
	}
}

func TestTamperMovedIntoSkippedModuleIsDeleted(t *testing.T) {
	t.Parallel()
	needPython(t)
	change := &verify.Change{Files: []verify.FileChange{
		fileChange("test_a.py", str("def test_x():\n    assert 1\n"), str("")),
		fileChange("test_b.py", nil, str("import pytest\npytestmark = pytest.mark.skip\n\ndef test_x():\n    assert 1\n")),
	}}
	fs, err := shared.Tamper(ctx(t), change)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Code != verify.FindingTestDeleted || fs[0].Path != "test_a.py" {
		t.Errorf("a test moved under a module-wide skip: got\n%s", findingsText(fs))
	}
}

func TestTamperInfrastructure(t *testing.T) {
	t.Parallel()
	setupBase := "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -q\n\n[flake8]\nmax-line-length = 100\n"
	setupOther := "[metadata]\nname = y\n\n[tool:pytest]\n# a comment\naddopts = -q\n\n[flake8]\nmax-line-length = 120\n"
	setupTest := "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -q -k 'not slow'\n\n[flake8]\nmax-line-length = 100\n"
	pyBase := "[project]\nname = \"x\"\nversion = \"1\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n"
	pyOther := "[project]\nname = \"x\"\nversion = \"2\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n"
	pyTest := "[project]\nname = \"x\"\nversion = \"1\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\ntestpaths = [\"tests/fast\"]\n"
	pyCov := "[project]\nname = \"x\"\nversion = \"1\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n\n[tool.coverage.run]\nomit = [\"*\"]\n"
	pyBroken := "[project\nname = \"x\"\n[tool.pytest.ini_options]\n"
	cases := []struct {
		file       verify.FileChange
		wantLine   int
		wantInMsg  string
		wantNoFind bool
	}{
		{file: fileChange("tests/conftest.py", str("import pytest\n"), str("import pytest\n\n@pytest.fixture\ndef db(): pass\n")), wantLine: 1, wantInMsg: "fixtures and hooks"},
		{file: fileChange("conftest.py", nil, str("def pytest_collection_modifyitems(items): items.clear()\n")), wantLine: 1, wantInMsg: "conftest.py added"},
		{file: fileChange("sub/conftest.py", str("x = 1\n"), nil), wantLine: 0, wantInMsg: "deleted"},
		{file: fileChange("pytest.ini", str("[pytest]\n"), str("[pytest]\naddopts = -p no:randomly\n")), wantLine: 1, wantInMsg: "pytest/tox"},
		{file: fileChange("tox.ini", str("[tox]\n"), str("[tox]\nskipsdist = true\n")), wantLine: 1, wantInMsg: "pytest/tox"},
		{file: fileChange(".coveragerc", str("[run]\n"), str("[run]\nomit = *\n")), wantLine: 1, wantInMsg: "coverage"},
		{file: fileChange("setup.cfg", &setupBase, &setupOther), wantNoFind: true},
		{file: fileChange("setup.cfg", &setupBase, &setupTest), wantLine: 4, wantInMsg: "[tool:pytest]"},
		{file: fileChange("pyproject.toml", &pyBase, &pyOther), wantNoFind: true},
		{file: fileChange("pyproject.toml", &pyBase, &pyTest), wantLine: 5, wantInMsg: "[tool.pytest]"},
		{file: fileChange("pyproject.toml", &pyBase, &pyCov), wantLine: 8, wantInMsg: "[tool.coverage]"},
		{file: fileChange("pyproject.toml", &pyBase, &pyBroken), wantLine: 3, wantInMsg: "[tool.pytest]"},
		{file: fileChange("pkg/visitor.py", str("import os\n\ndef f(x):\n    return x\n"), str("import os\n\ndef f(x):\n    if os.environ.get(\"PYTEST_CURRENT_TEST\"):\n        return -x\n    return x\n")), wantLine: 4, wantInMsg: "asks whether pytest runs it (PYTEST_CURRENT_TEST)"},
		{file: fileChange("pkg/core.py", nil, str("import sys\n\nUNDER_TEST = 'pytest' in sys.modules\n")), wantLine: 3, wantInMsg: "('pytest' in sys.modules)"},
		{file: fileChange("pkg/env.py", str("import os\nA = os.environ.get('PYTEST_VERSION')\n"), str("import os\n\nA = os.environ.get('PYTEST_VERSION')\n")), wantNoFind: true},
		{file: fileChange("tests/helpers.py", nil, str("import os\nNAME = os.environ['PYTEST_CURRENT_TEST']\n")), wantNoFind: true},
	}
	a := New("")
	for _, c := range cases {
		fs, err := a.Tamper(ctx(t), &verify.Change{Files: []verify.FileChange{c.file}})
		if err != nil {
			t.Fatal(err)
		}
		name := c.file.Path + " " + string(c.file.Status)
		if c.wantNoFind {
			if len(fs) != 0 {
				t.Errorf("%s: unrelated change reported:\n%s", name, findingsText(fs))
			}
			continue
		}
		if len(fs) != 1 {
			t.Errorf("%s: want one finding, got\n%s", name, findingsText(fs))
			continue
		}
		f := fs[0]
		if f.Code != verify.FindingTestInfra || f.Path != c.file.Path || f.Line != c.wantLine || !strings.Contains(f.Message, c.wantInMsg) {
			t.Errorf("%s: got %s, want line %d and %q in the message", name, findingsText(fs), c.wantLine, c.wantInMsg)
		}
	}
}
