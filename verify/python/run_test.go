package python

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// outcomeSnapshot is a snapshot of a base where mod.py lacks what the new
// tests use, with one test per kind of outcome.
var outcomeSnapshot = map[string]string{
	"mod.py": `
		def f(x):
		    return x

		def parse(s):
		    raise ValueError("cannot parse " + s)
		`,
	"tests/__init__.py": "",
	"tests/test_outcomes.py": `
		import pytest
		import mod

		def test_pass():
		    assert mod.f(1) == 1

		def test_assert():
		    assert mod.f(1) == 2

		def test_pytest_fail():
		    pytest.fail("explicit")

		def test_value_error():
		    mod.parse("x")

		def test_attribute():
		    assert mod.new_func() == 1

		def test_none_attribute():
		    assert mod.f(None).real == 0

		def test_name():
		    assert undefined_helper() == 1

		def test_new_kwarg():
		    assert mod.f(1, scale=2) == 2

		def test_skip():
		    pytest.skip("not today")

		@pytest.mark.xfail(reason="known")
		def test_xfail():
		    assert False

		@pytest.mark.parametrize("x", [1, 2, 3])
		def test_param(x):
		    assert mod.f(x) < 3

		@pytest.mark.parametrize("x", [1, 2])
		def test_param_ok(x):
		    assert mod.f(x) == x

		def test_local_import():
		    from mod import new_func
		    assert new_func()

		class TestK:
		    def test_method(self):
		        assert mod.f(2) == 2

		    class TestInner:
		        def test_inner(self):
		            assert mod.f(2) == 3
		`,
	"tests/test_import.py": `
		from mod import new_func

		def test_new_func():
		    assert new_func() == 1
		`,
}

func TestRunTestsOutcomes(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, outcomeSnapshot)
	const f = "tests/test_outcomes.py"
	want := map[string]verify.Outcome{
		"test_pass":                    verify.Pass,
		"test_assert":                  verify.Fail,
		"test_pytest_fail":             verify.Fail,
		"test_value_error":             verify.Fail,
		"test_attribute":               verify.MissingSymbol,
		"test_none_attribute":          verify.Fail,
		"test_name":                    verify.MissingSymbol,
		"test_new_kwarg":               verify.MissingSymbol,
		"test_skip":                    verify.Skip,
		"test_xfail":                   verify.Skip,
		"test_param":                   verify.Fail,
		"test_param_ok":                verify.Pass,
		"test_local_import":            verify.ImportError,
		"TestK::test_method":           verify.Pass,
		"TestK::TestInner::test_inner": verify.Fail,
		"test_does_not_exist":          verify.NotRun,
	}
	var tests []verify.Test
	for name := range want {
		tests = append(tests, testOf(f, name))
	}
	tests = append(tests, testOf("tests/test_import.py", "test_new_func"), testOf("tests/test_missing_file.py", "test_x"))
	res, err := shared.RunTests(ctx(t), runner, dir, tests, verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(tests) {
		t.Fatalf("%d results for %d tests", len(res), len(tests))
	}
	got := byName(res)
	for name, o := range want {
		r := got[name]
		if len(r) != 1 || r[0].Outcome != o {
			t.Errorf("%s: got %+v, want %s", name, r, o)
		}
	}
	if r := got["test_new_func"]; len(r) != 1 || r[0].Outcome != verify.ImportError || !strings.Contains(r[0].Detail, "new_func") {
		t.Errorf("test_new_func (module does not import): got %+v, want import_error naming new_func", r)
	}
	if r := got["test_x"]; len(r) != 1 || r[0].Outcome != verify.NotRun {
		t.Errorf("test in a missing file: got %+v, want not_run", r)
	}
	if d := got["test_value_error"][0].Detail; !strings.Contains(d, "ValueError") || !strings.Contains(d, "cannot parse x") {
		t.Errorf("value error detail %q should name the exception and its message", d)
	}
	if d := got["test_param"][0].Detail; !strings.Contains(d, "test_param[3]") {
		t.Errorf("parametrized detail %q should name the failing case", d)
	}
	if d := got["test_assert"][0].Detail; !strings.Contains(d, "assert 1 == 2") {
		t.Errorf("assertion detail %q should quote the assertion", d)
	}
	// A module that fails to collect makes pytest refuse node ids in it;
	// the other tests of the batch still run.
	res, err = shared.RunTests(ctx(t), runner, dir, []verify.Test{testOf("tests/test_import.py", "test_new_func"), testOf(f, "test_pass")}, verify.RunOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Outcome != verify.ImportError || res[1].Outcome != verify.Pass {
		t.Errorf("import error beside a passing test: got %+v", res)
	}
	// Nothing of the run is left in the snapshot.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".bcode") || e.Name() == ".pytest_cache" {
			t.Errorf("run left %s in the snapshot", e.Name())
		}
	}
}

func TestRunTestsConftestDoesNotImport(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"mod.py":            "def f():\n    return 1\n",
		"tests/conftest.py": "from mod import new_fixture_helper\n",
		"tests/test_a.py":   "def test_a():\n    assert False\n",
	})
	res, err := shared.RunTests(ctx(t), runner, dir, []verify.Test{testOf("tests/test_a.py", "test_a")}, verify.RunOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != verify.ImportError || !strings.Contains(res[0].Detail, "new_fixture_helper") {
		t.Errorf("conftest that does not import: got %+v, want import_error", res)
	}
	suite, err := shared.RunSuite(ctx(t), runner, dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if suite.Outcome != verify.BuildError {
		t.Errorf("suite with a conftest that does not import: %+v, want build_error", suite)
	}
}

func TestRunTestsCount(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		// Fails on every other run: the counter file outlives each run.
		"test_flaky.py": `
			import os

			def test_alternates():
			    p = os.path.join(os.path.dirname(__file__), "counter")
			    n = int(open(p).read()) if os.path.exists(p) else 0
			    open(p, "w").write(str(n + 1))
			    assert n % 2 == 0

			def test_steady():
			    assert True
			`,
	})
	tests := []verify.Test{testOf("test_flaky.py", "test_alternates"), testOf("test_flaky.py", "test_steady")}
	res, err := shared.RunTests(ctx(t), runner, dir, tests, verify.RunOptions{Count: 3, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := byName(res)
	var alt []verify.Outcome
	for _, r := range got["test_alternates"] {
		alt = append(alt, r.Outcome)
	}
	if want := []verify.Outcome{verify.Pass, verify.Fail, verify.Pass}; strings.Join(outs(alt), ",") != strings.Join(outs(want), ",") {
		t.Errorf("three separate runs of test_alternates: got %v, want %v", alt, want)
	}
	if len(got["test_steady"]) != 3 {
		t.Errorf("test_steady: %d results, want 3", len(got["test_steady"]))
	}
}

func outs(list []verify.Outcome) []string {
	var s []string
	for _, o := range list {
		s = append(s, string(o))
	}
	return s
}

func TestRunTestsTimeout(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"test_slow.py": `
			import time

			def test_fast():
			    assert 1 + 1 == 3

			def test_slow():
			    time.sleep(600)

			def test_after():
			    pass
			`,
	})
	tests := []verify.Test{testOf("test_slow.py", "test_fast"), testOf("test_slow.py", "test_slow"), testOf("test_slow.py", "test_after")}
	// The batch's deadline comes from what a run of test_fast alone takes
	// now, so that test_fast finishes before it at any load (CI, load
	// above 30: a fixed 4 s deadline came before test_fast once).
	t0 := time.Now()
	if _, err := shared.RunTests(ctx(t), runner, dir, tests[:1], verify.RunOptions{Count: 1}); err != nil {
		t.Fatal(err)
	}
	timeout := max(4*time.Second, 3*time.Since(t0))
	start := time.Now()
	res, err := shared.RunTests(ctx(t), runner, dir, tests, verify.RunOptions{Count: 1, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	// The deadline ended the batch, not test_slow's sleep.
	if el := time.Since(start); el > 5*time.Minute {
		t.Errorf("a %s batch timeout took %s", timeout, el)
	}
	got := byName(res)
	if r := got["test_fast"]; len(r) != 1 || r[0].Outcome != verify.Fail {
		t.Errorf("test_fast finished before the timeout: got %+v, want fail", r)
	}
	for _, n := range []string{"test_slow", "test_after"} {
		if r := got[n]; len(r) != 1 || r[0].Outcome != verify.Timeout {
			t.Errorf("%s: got %+v, want timeout", n, r)
		}
	}
}

func TestRunTestsWithoutPytest(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"test_a.py": "def test_a():\n    pass\n"})
	a := New(filepath.Join(dir, "no-such-python"))
	res, err := a.RunTests(ctx(t), runner, dir, []verify.Test{testOf("test_a.py", "test_a")}, verify.RunOptions{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("want 2 results, got %+v", res)
	}
	for _, r := range res {
		if r.Outcome != verify.EnvError || !strings.Contains(r.Detail, "pytest not found") || !strings.Contains(r.Detail, "gate.python") {
			t.Errorf("got %+v, want env_error telling how to install pytest", r)
		}
	}
	suite, err := a.RunSuite(ctx(t), runner, dir, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if suite.Outcome != verify.EnvError || !strings.Contains(suite.Detail, "apt-get install python3-pytest") {
		t.Errorf("suite without pytest: got %+v", suite)
	}
}

func TestInterpreterChoice(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	py, err := shared.interpreter(ctx(t), runner, dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(ctx(t), sandbox.Command{Dir: dir, Args: []string{py, "-c", "import pytest"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("chosen interpreter %s cannot import pytest: %v %s", py, err, res.Stderr)
	}
	// A repository's own virtualenv wins.
	venv := filepath.Join(dir, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(py, filepath.Join(venv, "python")); err != nil {
		t.Fatal(err)
	}
	got, err := New("").interpreter(ctx(t), runner, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(venv, "python") {
		t.Errorf("with a .venv: chose %s, want %s", got, filepath.Join(venv, "python"))
	}
}
