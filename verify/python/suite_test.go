package python

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

func TestRunSuite(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"calc.py":             "def add(a, b):\n    return a + b\n",
		"tests/test_good.py":  "import calc\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n",
		"tests/test_bad.py":   "import calc\n\nclass TestAdd:\n    def test_wrong(self):\n        assert calc.add(1, 2) == 4\n",
		"tests/test_empty.py": "# no tests yet\n",
	})
	a := shared

	pass, err := a.RunSuite(ctx(t), runner, dir, []string{"tests/test_good.py"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if pass.Outcome != verify.Pass || !reflect.DeepEqual(pass.Targets, []string{"tests/test_good.py"}) {
		t.Errorf("targeted passing file: %+v", pass)
	}

	full, err := a.RunSuite(ctx(t), runner, dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if full.Outcome != verify.Fail || !reflect.DeepEqual(full.Failed, []string{"tests/test_bad.py::TestAdd::test_wrong"}) {
		t.Errorf("full suite with a failing test: %+v", full)
	}
	if !strings.Contains(full.Detail, "assert 3 == 4") {
		t.Errorf("failure detail %q should quote the assertion", full.Detail)
	}

	none, err := a.RunSuite(ctx(t), runner, dir, []string{"tests/test_empty.py"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if none.Outcome != verify.Pass || none.Targets != nil {
		t.Errorf("no tests collected (exit 5): %+v, want pass with no targets", none)
	}

	writeTree(t, dir, map[string]string{"tests/test_broken.py": "from calc import subtract\n\ndef test_sub():\n    pass\n"})
	broken, err := a.RunSuite(ctx(t), runner, dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if broken.Outcome != verify.BuildError || len(broken.Failed) == 0 || broken.Failed[0] != "tests/test_broken.py" || !strings.Contains(broken.Detail, "subtract") {
		t.Errorf("collection error: %+v, want build_error naming tests/test_broken.py", broken)
	}
}

func TestRunSuiteTimeout(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"test_hang.py": "import time\n\ndef test_hang():\n    time.sleep(60)\n"})
	res, err := shared.RunSuite(ctx(t), runner, dir, nil, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != verify.Timeout {
		t.Errorf("got %+v, want timeout", res)
	}
}

func TestRunSuiteNoPythonTests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.go": "package main\n", "tools/gen.py": "print('not a test')\n"})
	// An interpreter that does not exist proves nothing was run.
	a := New("/nonexistent/python3")
	res, err := a.RunSuite(ctx(t), runner, dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != verify.Pass || res.Targets != nil {
		t.Errorf("repository without python tests: %+v, want pass with no targets", res)
	}
}
