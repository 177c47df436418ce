package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

// pyCase is one change run through the whole gate with this adapter on real
// pytest.
type pyCase struct {
	base, head map[string]string
	want       verify.Verdict
	code       string   // a reason or finding code the report must carry
	credited   []string // node IDs after "file::" that must be credited
	adapter    *Adapter
}

func runPyCase(t *testing.T, c pyCase) *verify.Report {
	t.Helper()
	needPytest(t)
	a := c.adapter
	if a == nil {
		a = shared
	}
	cfg := config.Default()
	cfg.Gate.FlakeRuns = 2
	g := &verify.Gate{Runner: runner, Adapters: []verify.Adapter{a}}
	rep, err := g.Check(ctx(t), changeOf(t, c.base, c.head), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != c.want {
		t.Fatalf("verdict %s, want %s\nreasons %+v\ntamper %+v\ntests %+v\np2p %+v\nchanged %+v", rep.Verdict, c.want, rep.Reasons, rep.Tamper, rep.Tests, rep.PassToPass, rep.ChangedExpectations)
	}
	if c.code != "" && !hasCode(rep, c.code) {
		t.Fatalf("report has no %s: reasons %+v tamper %+v changed %+v", c.code, rep.Reasons, rep.Tamper, rep.ChangedExpectations)
	}
	got := map[string]bool{}
	for _, tr := range rep.Credited() {
		got[tr.Name] = true
	}
	for _, n := range c.credited {
		if !got[n] {
			t.Fatalf("%s not credited; tests %+v", n, rep.Tests)
		}
	}
	return rep
}

func hasCode(rep *verify.Report, code string) bool {
	for _, r := range rep.Reasons {
		if r.Code == code {
			return true
		}
	}
	for _, f := range append(append([]verify.Finding(nil), rep.Tamper...), rep.ChangedExpectations...) {
		if f.Code == code {
			return true
		}
	}
	return false
}

const (
	pyBuggy = "def clamp(x, lo, hi):\n    return max(lo, x)\n"
	pyFixed = "def clamp(x, lo, hi):\n    return min(hi, max(lo, x))\n"
	// The rows of a parametrized test live in a module-level table.
	pyTable = "import pytest\nimport calc\nfrom tests.rows import ROWS\n\n@pytest.mark.parametrize('x,lo,hi,want', ROWS)\ndef test_clamp(x, lo, hi, want):\n    assert calc.clamp(x, lo, hi) == want\n"
)

// TestGateCreditsParametrizeRowsInAHelper: the change adds a row to a
// table in a non-test_*.py module under tests/; the new parametrized case
// fails on the base with the head's helper and passes on the head.
func TestGateCreditsParametrizeRowsInAHelper(t *testing.T) {
	t.Parallel()
	base := map[string]string{"calc.py": pyBuggy, "tests/__init__.py": "", "tests/test_calc.py": pyTable,
		"tests/rows.py": "ROWS = [(1, 0, 5, 1)]\n"}
	head := map[string]string{"calc.py": pyFixed, "tests/__init__.py": "", "tests/test_calc.py": pyTable,
		"tests/rows.py": "ROWS = [(1, 0, 5, 1), (9, 0, 5, 5)]\n"}
	runPyCase(t, pyCase{base: base, head: head, want: verify.Verified, credited: []string{"test_clamp[9-0-5-5]"}})
}

// TestGateCreditsAttributeErrorRaisedByTheBug: the bug itself raises an
// AttributeError inside the code under test (a name the change does not
// add): that is a behavioural failure, and earns credit.
func TestGateCreditsAttributeErrorRaisedByTheBug(t *testing.T) {
	t.Parallel()
	code := "class Box:\n    def __init__(self, items):\n        self.items = items\n\n    def size(self):\n        return len(self.itmes)\n"
	fixed := strings.Replace(code, "self.itmes", "self.items", 1)
	test := "import box\n\ndef test_size():\n    assert box.Box([1, 2]).size() == 2\n"
	base := map[string]string{"box.py": code}
	head := map[string]string{"box.py": fixed, "tests/test_box.py": test}
	runPyCase(t, pyCase{base: base, head: head, want: verify.Verified, credited: []string{"test_size"}})
}

// TestGateCreditsTypeErrorRaisedByTheBug: the base's code calls its own
// helper with the wrong arguments, and the fix gives the helper the
// parameter it was called with. The TypeError is raised inside the code
// under test about a name both sides have: the bug itself, credited.
func TestGateCreditsTypeErrorRaisedByTheBug(t *testing.T) {
	t.Parallel()
	code := "def scale(x):\n    return x * 2\n\ndef total(a, b):\n    return scale(a, b)\n"
	fixed := "def scale(x, y=0):\n    return (x + y) * 2\n\ndef total(a, b):\n    return scale(a, b)\n"
	test := "import calc\n\ndef test_total():\n    assert calc.total(1, 2) == 6\n"
	base := map[string]string{"calc.py": code}
	head := map[string]string{"calc.py": fixed, "tests/test_calc.py": test}
	rep := runPyCase(t, pyCase{base: base, head: head, want: verify.Verified, credited: []string{"test_total"}})
	for _, tr := range rep.Credited() {
		if tr.Name == "test_total" && !strings.Contains(tr.BaseDetail, "raised in calc.py") {
			t.Errorf("the credit does not say where the failure was raised: %q", tr.BaseDetail)
		}
	}
}

// TestGateNoCreditForANewSignatureTheTestCalls: the test itself calls
// the helper with the parameter the change adds: it fails on the base
// because the API is new, which earns no credit.
func TestGateNoCreditForANewSignatureTheTestCalls(t *testing.T) {
	t.Parallel()
	code := "def scale(x):\n    return x * 2\n"
	fixed := "def scale(x, y=0):\n    return (x + y) * 2\n"
	test := "import calc\n\ndef test_scale():\n    assert calc.scale(1, 2) == 6\n"
	base := map[string]string{"calc.py": code}
	head := map[string]string{"calc.py": fixed, "tests/test_calc.py": test}
	rep := runPyCase(t, pyCase{base: base, head: head, want: verify.Green})
	for _, tr := range rep.Credited() {
		t.Errorf("%s credited for calling a signature the change adds", tr.Name)
	}
}

// TestGateSrcLayout: the package lives under src/ with a pyproject.toml;
// each snapshot imports its own src/.
func TestGateSrcLayout(t *testing.T) {
	t.Parallel()
	pyproject := "[project]\nname = \"calc\"\nversion = \"0\"\n"
	test := "from calc import clamp\n\ndef test_clamp_high():\n    assert clamp(9, 0, 5) == 5\n"
	base := map[string]string{"pyproject.toml": pyproject, "src/calc/__init__.py": "from .core import clamp\n", "src/calc/core.py": pyBuggy}
	head := map[string]string{"pyproject.toml": pyproject, "src/calc/__init__.py": "from .core import clamp\n", "src/calc/core.py": pyFixed, "tests/test_core.py": test}
	runPyCase(t, pyCase{base: base, head: head, want: verify.Verified, credited: []string{"test_clamp_high"}})
}

// TestGateUsesTheCheckoutsVenvAndTheSnapshotsCode: the user's checkout has
// an untracked .venv whose site-packages holds a dependency the tests need
// and an editable install (.pth) pointing at the checkout's src/, where the
// fixed code already is. The venv is the interpreter; each snapshot still
// imports its own code: with the checkout's code the test would pass on the
// base and earn nothing.
func TestGateUsesTheCheckoutsVenvAndTheSnapshotsCode(t *testing.T) {
	t.Parallel()
	needPytest(t)
	checkout := t.TempDir()
	venv := filepath.Join(checkout, ".venv")
	if out, err := exec.Command(systemPython, "-m", "venv", "--system-site-packages", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("cannot make a virtualenv here (apt-get install python3-venv): %v: %s", err, out)
	}
	site, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if err != nil || len(site) != 1 {
		t.Fatalf("site-packages of the venv: %v %v", site, err)
	}
	writeTree(t, site[0], map[string]string{"onlyinvenv.py": "LIMIT = 5\n"})
	writeTree(t, checkout, map[string]string{"src/calc/__init__.py": "from .core import clamp\n", "src/calc/core.py": pyFixed})
	if err := os.WriteFile(filepath.Join(site[0], "__editable__calc.pth"), []byte(filepath.Join(checkout, "src")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	test := "import onlyinvenv\nfrom calc import clamp\n\ndef test_clamp_high():\n    assert clamp(9, 0, onlyinvenv.LIMIT) == 5\n"
	base := map[string]string{"src/calc/__init__.py": "from .core import clamp\n", "src/calc/core.py": pyBuggy}
	head := map[string]string{"src/calc/__init__.py": "from .core import clamp\n", "src/calc/core.py": pyFixed, "tests/test_core.py": test}
	a := New("")
	a.Checkout = checkout
	runPyCase(t, pyCase{base: base, head: head, want: verify.Verified, credited: []string{"test_clamp_high"}, adapter: a})
}

// TestGateCannotImportOnEitherSideIsAnError: a test module that imports a
// package installed nowhere cannot run on either side: error, not failed.
func TestGateCannotImportOnEitherSideIsAnError(t *testing.T) {
	t.Parallel()
	test := "import bcode_not_installed_anywhere\nimport calc\n\ndef test_clamp():\n    assert calc.clamp(9, 0, 5) == 5\n"
	base := map[string]string{"calc.py": pyBuggy, "tests/test_calc.py": test}
	head := map[string]string{"calc.py": pyFixed, "tests/test_calc.py": test + "\ndef test_more():\n    assert calc.clamp(1, 0, 5) == 1\n"}
	runPyCase(t, pyCase{base: base, head: head, want: verify.Error, code: verify.ReasonCannotRun})
}

// pyPassing is a base whose test passes; each tampering head below breaks
// the code and hides the test another way.
var pyPassing = map[string]string{"calc.py": pyFixed, "tests/test_calc.py": "import calc\n\ndef test_high():\n    assert calc.clamp(9, 0, 5) == 5\n"}

func tamperedHead(files map[string]string) map[string]string {
	out := map[string]string{"calc.py": pyBuggy}
	for k, v := range files {
		out[k] = v
	}
	return out
}

// TestGateRunTimeTampering: every way of making a passing test disappear
// on the head is seen at run time, whatever did it.
func TestGateRunTimeTampering(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"__test__ = False":           {"tests/test_calc.py": "import calc\n__test__ = False\n\ndef test_high():\n    assert calc.clamp(9, 0, 5) == 5\n"},
		"setUpClass raises SkipTest": {"tests/test_calc.py": "import unittest\nimport calc\n\nclass T(unittest.TestCase):\n    @classmethod\n    def setUpClass(cls):\n        raise unittest.SkipTest('later')\n\n    def test_high(self):\n        assert calc.clamp(9, 0, 5) == 5\n\ndef test_high():\n    T.setUpClass()\n"},
		"conftest deselects it":      {"tests/conftest.py": "def pytest_collection_modifyitems(config, items):\n    keep = [i for i in items if 'high' not in i.name]\n    config.hook.pytest_deselected(items=[i for i in items if 'high' in i.name])\n    items[:] = keep\n"},
		"xfail from a helper marker": {"tests/conftest.py": "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.xfail(reason='known'))\n"},
		"plugin turns the failure into a pass": {
			"tests/conftest.py": "pytest_plugins = ['tests.helpers']\n",
			"tests/__init__.py": "",
			"tests/helpers.py":  "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n    if rep.when == 'call' and rep.failed:\n        rep.outcome = 'passed'\n        rep.longrepr = None\n"},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep := runPyCase(t, pyCase{base: pyPassing, head: tamperedHead(files), want: verify.Tampered})
			runtime := false
			for _, f := range rep.Tamper {
				if f.Code == verify.FindingTestVanished || f.Code == verify.FindingReportAltered {
					runtime = true
				}
			}
			if !runtime {
				t.Fatalf("tampered only by static findings %+v; the run-time check saw nothing", rep.Tamper)
			}
		})
	}
}

// TestGateDuplicateDefShadowsATest: a second `def test_high` replaces the
// first; the ID still passes, but the base's version of the file, run
// against the head, fails: changed expectations that earn no credit.
func TestGateDuplicateDefShadowsATest(t *testing.T) {
	t.Parallel()
	head := tamperedHead(map[string]string{"tests/test_calc.py": pyPassing["tests/test_calc.py"] + "\ndef test_high():\n    assert True\n"})
	runPyCase(t, pyCase{base: pyPassing, head: head, want: verify.Tampered, code: verify.FindingChangedExpectations})
}

// TestGateLaxHelperWithTheFixDropped: a helper under tests/ (not a
// test_*.py file) is made lax and the code broken. The base runs the head's
// lax helper for "fail before", and the base's strict helper runs against
// the head for "old tests on new code".
func TestGateLaxHelperWithTheFixDropped(t *testing.T) {
	t.Parallel()
	base := map[string]string{"calc.py": pyFixed, "tests/__init__.py": "",
		"tests/check.py":     "def same(a, b):\n    assert a == b\n",
		"tests/test_calc.py": "import calc\nfrom tests.check import same\n\ndef test_high():\n    same(calc.clamp(9, 0, 5), 5)\n"}
	head := map[string]string{"calc.py": pyBuggy, "tests/__init__.py": "",
		"tests/check.py":     "def same(a, b):\n    return True\n",
		"tests/test_calc.py": base["tests/test_calc.py"] + "\ndef test_low():\n    same(calc.clamp(-1, 0, 5), 0)\n"}
	runPyCase(t, pyCase{base: base, head: head, want: verify.Tampered, code: verify.FindingChangedExpectations})
}

// TestGateLaxTestUtilOutsideTests: a helper module named for tests lives in
// the package, not under tests/. Made lax with the fix dropped, it must not
// earn a new test credit: it is test support, laid over the base too.
func TestGateLaxTestUtilOutsideTests(t *testing.T) {
	t.Parallel()
	strict := "def same(a, b):\n    assert a == b\n"
	lax := "def same(a, b):\n    return True\n"
	test := "import calc\nfrom testutil import same\n\ndef test_high():\n    same(calc.clamp(9, 0, 5), 5)\n"
	base := map[string]string{"calc.py": pyBuggy, "testutil.py": strict}
	head := map[string]string{"calc.py": pyBuggy, "testutil.py": lax, "tests/test_calc.py": test}
	rep := runPyCase(t, pyCase{base: base, head: head, want: verify.Tampered, code: verify.FindingChangedExpectations})
	if len(rep.Credited()) != 0 {
		t.Fatalf("credited %+v", rep.Credited())
	}
}

// TestGateLaxHelperNewTestFixDropped: the fix is dropped, a new test is
// added, and the helper it asserts through is made lax. The base runs the
// lax helper too, so nothing is credited; the new test passes on the head
// only because of the head's helper: with the base's strict helper laid
// over the head (the head's tests kept) it fails. That is tampering, not
// green.
func TestGateLaxHelperNewTestFixDropped(t *testing.T) {
	t.Parallel()
	base := map[string]string{"calc.py": pyBuggy, "tests/__init__.py": "",
		"tests/check.py":     "def same(a, b):\n    assert a == b\n",
		"tests/test_calc.py": "import calc\nfrom tests.check import same\n\ndef test_mid():\n    same(calc.clamp(3, 0, 5), 3)\n"}
	head := map[string]string{"calc.py": pyBuggy, "tests/__init__.py": "",
		"tests/check.py":     "def same(a, b):\n    return True\n",
		"tests/test_calc.py": base["tests/test_calc.py"] + "\ndef test_high():\n    same(calc.clamp(9, 0, 5), 5)\n"}
	rep := runPyCase(t, pyCase{base: base, head: head, want: verify.Tampered, code: verify.FindingChangedExpectations})
	if len(rep.Credited()) != 0 {
		t.Fatalf("credited %+v", rep.Credited())
	}
	found := false
	for _, f := range rep.ChangedExpectations {
		found = found || strings.Contains(f.Message, "test_high") && strings.Contains(f.Message, "only with the head's test support")
	}
	if !found {
		t.Fatalf("no finding names test_high and the head's support: %+v", rep.ChangedExpectations)
	}
}
