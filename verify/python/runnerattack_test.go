package python

import (
	"testing"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// runnerAttack is production code added to the wrong change's calc.py
// (clamp stays broken, a new test of the fix is added): at import it
// reaches into the pytest process it runs in and makes test_high pass.
// The tests and every start-up file are untouched; the code under test
// decides its own test's outcome.
type runnerAttack struct {
	name string
	code string
	// plain: plain pytest on the head passes with it (the control that
	// the attack is armed); false for attacks on bcode's own plugin or
	// log, which plain pytest does not load.
	plain bool
}

var runnerAttacks = []runnerAttack{
	{name: "Function.runtest replaced, failures of test_high swallowed", plain: true, code: `
import _pytest.python as _pp
_orig = _pp.Function.runtest
def _runtest(self):
    try:
        _orig(self)
    except AssertionError:
        if self.name != "test_high":
            raise
_pp.Function.runtest = _runtest
`},
	{name: "Function.runtest's __code__ swapped in place", plain: true, code: `
import _pytest.python as _pp
def _runtest(self):
    try:
        self.ihook.pytest_pyfunc_call(pyfuncitem=self)
    except AssertionError:
        if self.name != "test_high":
            raise
_pp.Function.runtest.__code__ = _runtest.__code__
`},
	{name: "CallInfo.from_call drops the call's exception", plain: true, code: `
import _pytest.runner as _pr
_orig = _pr.CallInfo.from_call.__func__
def _from_call(cls, func, when, reraise=None):
    info = _orig(cls, func, when, reraise)
    if when == "call" and info.excinfo is not None and info.excinfo.errisinstance(AssertionError):
        object.__setattr__(info, "excinfo", None)
    return info
_pr.CallInfo.from_call = classmethod(_from_call)
`},
	{name: "the plugin manager's hook executor wrapped to clear the exception", plain: true, code: `
import gc
from _pytest.config import PytestPluginManager
for _o in gc.get_objects():
    if isinstance(_o, PytestPluginManager):
        def _wrapped(hook_name, methods, kwargs, firstresult, _inner=_o._inner_hookexec):
            call = kwargs.get("call")
            if hook_name == "pytest_runtest_makereport" and call is not None and call.when == "call" and kwargs["item"].name == "test_high":
                object.__setattr__(call, "excinfo", None)
            return _inner(hook_name, methods, kwargs, firstresult)
        _o._inner_hookexec = _wrapped
`},
	{name: "bcode's plugin's writer replaced to say test_high passed", code: `
import sys
_m = sys.modules.get("bcode_pytest_log")
if _m is not None:
    _w = _m._write
    def _write(rec):
        if rec.get("nodeid", "").endswith("test_high"):
            rec = dict(rec, outcome="passed", raw="passed", message="", text="")
        _w(rec)
    _m._write = _write
`},
	{name: "bcode's log rewritten at exit", code: `
import atexit, glob, os
def _rewrite():
    for p in glob.glob(os.path.join(os.getcwd(), ".bcode-pytest-*", "log.jsonl")):
        with open(p) as f:
            text = f.read()
        with open(p, "w") as f:
            f.write(text.replace('"failed"', '"passed"'))
atexit.register(_rewrite)
`},
	{name: "lines appended to bcode's log at exit", code: `
import atexit, glob, json, os
def _append():
    for p in glob.glob(os.path.join(os.getcwd(), ".bcode-pytest-*", "log.jsonl")):
        with open(p, "a") as f:
            for when in ("setup", "call", "teardown"):
                f.write(json.dumps({"nodeid": "tests/test_calc.py::test_high", "when": when, "outcome": "passed", "raw": "passed"}) + "\n")
atexit.register(_append)
`},
}

// TestGateRunnerAttacks: production code that alters the pytest process
// it runs in (its runner, its hook executor, bcode's plugin or bcode's
// log) does not get the wrong change verified, and the report says the
// report was altered. The control: each attack aimed at pytest itself
// makes plain pytest pass on the head, and the head without it fails.
func TestGateRunnerAttacks(t *testing.T) {
	t.Parallel()
	needPytest(t)
	for _, c := range runnerAttacks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			head := map[string]string{"calc.py": pyBuggy + c.code, "tests/test_calc.py": isoTest}
			if c.plain {
				if passed, out := oldLaunch(t, home, head); !passed {
					t.Fatalf("control: the attack does not make plain pytest pass; it is not armed\n%s", out)
				}
			}
			if passed, out := oldLaunch(t, home, map[string]string{"calc.py": pyBuggy, "tests/test_calc.py": isoTest}); passed {
				t.Fatalf("control: the wrong change passes plain pytest without the attack\n%s", out)
			}
			rep := gateReport(t, &host.Runner{Home: home}, New(""), isoBase, head)
			if rep.Verdict == verify.Verified || len(rep.Credited()) > 0 {
				t.Fatalf("verdict %s, credited %+v; the wrong change must not be verified\ntests %+v", rep.Verdict, rep.Credited(), rep.Tests)
			}
			if !hasFinding(rep, verify.FindingReportAltered) {
				t.Fatalf("verdict %s with no %s finding; tamper %+v", rep.Verdict, verify.FindingReportAltered, rep.Tamper)
			}
		})
	}
}

// TestGateCodeUsingPytestIsNotAltered: production code that imports
// pytest (a package shipping test helpers) and a test that patches
// pytest's own code with monkeypatch, restored at its teardown, leave
// the report alone: the fix is verified.
func TestGateCodeUsingPytestIsNotAltered(t *testing.T) {
	t.Parallel()
	needPytest(t)
	helper := "import pytest\nimport _pytest.python\n\ndef approx_clamp(x):\n    return pytest.approx(x)\n"
	test := isoTest + "\ndef test_patches_pytest(monkeypatch):\n    import _pytest.python as pp\n" +
		"    monkeypatch.setattr(pp, 'getlocation', lambda *a, **k: 'here')\n    assert pp.getlocation(None) == 'here'\n"
	head := map[string]string{"calc.py": pyFixed + "\n" + helper, "tests/test_calc.py": test}
	rep := gateReport(t, &host.Runner{Home: t.TempDir()}, New(""), isoBase, head)
	if rep.Verdict != verify.Verified || hasFinding(rep, verify.FindingReportAltered) {
		t.Fatalf("verdict %s, tamper %+v; want verified with no altered report\ntests %+v", rep.Verdict, rep.Tamper, rep.Tests)
	}
}

func hasFinding(rep *verify.Report, code string) bool {
	for _, f := range rep.Tamper {
		if f.Code == code {
			return true
		}
	}
	return false
}
