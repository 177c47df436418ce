package python

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// A wrong change: calc stays broken and a new test of the fix is added.
// Each attack below adds a file that, under the launch the gate used
// before (`python -m pytest` with the snapshot first on PYTHONPATH), runs
// before the tests and makes the new test pass on the head only.
var (
	isoBase = map[string]string{
		"calc.py":            pyBuggy,
		"tests/test_calc.py": "import calc\n\ndef test_mid():\n    assert calc.clamp(3, 0, 5) == 3\n",
	}
	isoTest = isoBase["tests/test_calc.py"] + "\ndef test_high():\n    assert calc.clamp(9, 0, 5) == 5\n"
)

// isoPatch puts the fix into the imported calc module: the code as it
// lands stays broken.
const isoPatch = "import calc\ncalc.clamp = lambda x, lo, hi: min(hi, max(lo, x))\n"

// shadowOf is a module named like one the interpreter, site or pytest
// imports at start-up: it loads the real one from past the snapshot,
// hands it over, and patches calc. depth is 1 for name.py, 2 for
// name/__init__.py.
func shadowOf(depth int) string {
	root := "_os.path.abspath(__file__)"
	for range depth {
		root = "_os.path.dirname(" + root + ")"
	}
	return "import os as _os, sys as _sys, importlib as _il\n" +
		"_root = " + root + "\n" +
		"_saved = _sys.path[:]\n" +
		"_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _root]\n" +
		"del _sys.modules[__name__]\n" +
		"_real = _il.import_module(__name__)\n" +
		"_sys.path[:] = _saved\n" +
		"_sys.modules[__name__] = _real\n" + isoPatch
}

// pytestShadow runs instead of pytest under `python -m pytest`, imports
// the real one and lets one failing test pass.
const pytestShadow = `import os, sys
_root = os.path.dirname(os.path.abspath(__file__))
_saved = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _root]
sys.modules.pop("pytest", None)
import pytest as _real
sys.path[:] = _saved
from _pytest.python import Function
_runtest = Function.runtest
def runtest(self):
    try:
        _runtest(self)
    except AssertionError:
        if self.name != "test_high":
            raise
Function.runtest = runtest
if __name__ == "__main__":
    raise SystemExit(_real.console_main())
`

// startupAttack is a file set that makes the wrong change's test pass
// under the old launch.
type startupAttack struct {
	name  string
	files map[string]string // added to the wrong head
	test  string            // the head's test file, when not isoTest
	// userSite is planted in the runner's HOME user site-packages, as a
	// test of an earlier run could have written it there.
	userSite map[string]string
	// notArmed: the old launch did not run it either (held before).
	notArmed bool
}

// childTest checks the fix in a process it starts.
var childTest = isoBase["tests/test_calc.py"] + "\ndef test_high_in_a_child():\n    import subprocess, sys\n" +
	"    out = subprocess.run([sys.executable, '-c', 'import calc; print(calc.clamp(9, 0, 5))'], capture_output=True, text=True)\n" +
	"    assert out.stdout.strip() == '5', out.stderr\n"

var startupAttacks = []startupAttack{
	{name: "sitecustomize.py at the root", files: map[string]string{"sitecustomize.py": isoPatch}},
	{name: "sitecustomize.py in src", files: map[string]string{"src/sitecustomize.py": isoPatch, "src/other.py": ""}},
	{name: "usercustomize.py at the root", files: map[string]string{"usercustomize.py": isoPatch}},
	{name: "pytest.py at the root", files: map[string]string{"pytest.py": pytestShadow}},
	{name: "json.py shadows the standard library", files: map[string]string{"json.py": shadowOf(1)}},
	{name: "unittest package shadows the standard library", files: map[string]string{"unittest/__init__.py": shadowOf(2)}},
	{name: "pluggy.py shadows pytest's dependency", files: map[string]string{"pluggy.py": shadowOf(1)}},
	{name: "iniconfig.py shadows pytest's dependency", files: map[string]string{"iniconfig.py": shadowOf(1)}},
	{name: "_pytest.py shadows pytest's own package", files: map[string]string{"_pytest.py": shadowOf(1)}},
	{name: "sitecustomize.py in the processes a test starts", test: childTest,
		files: map[string]string{"sitecustomize.py": isoPatch}},
	{name: "a .pth in the user site an earlier run left in HOME", files: map[string]string{"calc.py": pyBuggy + "# head\n"},
		userSite: map[string]string{"bcode_attack.pth": "import calc; exec(\"if '# head' in open(calc.__file__).read(): calc.clamp = lambda x, lo, hi: min(hi, max(lo, x))\")\n"}},
	{name: "usercustomize.py in the user site an earlier run left in HOME", files: map[string]string{"calc.py": pyBuggy + "# head\n"},
		userSite: map[string]string{"usercustomize.py": "import calc\nif '# head' in open(calc.__file__).read():\n    calc.clamp = lambda x, lo, hi: min(hi, max(lo, x))\n"}},
	{name: "a .pth in the user site, in the processes a test starts", test: childTest, files: map[string]string{"calc.py": pyBuggy + "# head\n"},
		userSite: map[string]string{"bcode_attack.pth": "import calc; exec(\"if '# head' in open(calc.__file__).read(): calc.clamp = lambda x, lo, hi: min(hi, max(lo, x))\")\n"}},
	{name: "a .pth file in the tree", files: map[string]string{"bcode_attack.pth": "import calc; calc.clamp = lambda x, lo, hi: min(hi, max(lo, x))\n"}, notArmed: true},
}

func (c startupAttack) head(withAttack bool) map[string]string {
	head := map[string]string{"calc.py": pyBuggy, "tests/test_calc.py": isoTest}
	if c.test != "" {
		head["tests/test_calc.py"] = c.test
	}
	if withAttack {
		for p, s := range c.files {
			head[p] = s
		}
	}
	return head
}

// userSiteOf plants files in the user site-packages of home, as systemPython
// computes it.
func userSiteOf(t *testing.T, home string, files map[string]string) {
	t.Helper()
	out, err := exec.Command(systemPython, "-I", "-c", "import sys; print('python%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, filepath.Join(home, ".local", "lib", strings.TrimSpace(string(out)), "site-packages"), files)
}

// oldLaunch runs the head's tests as the gate did before: `python -m
// pytest` with the snapshot (and its src/) first on PYTHONPATH, user site
// on. It reports whether they passed.
func oldLaunch(t *testing.T, home string, files map[string]string) (bool, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	path := dir
	if fi, err := os.Stat(filepath.Join(dir, "src")); err == nil && fi.IsDir() {
		path = filepath.Join(dir, "src") + string(os.PathListSeparator) + dir
	}
	cmd := exec.Command(systemPython, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir="+dir, "tests")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "PYTHONPATH=" + path, "PYTHONSAFEPATH=1", "PYTHONDONTWRITEBYTECODE=1"}
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

// TestGateStartupAttacks: every attack makes the wrong change's test pass
// under the old launch (the control: without the attack's files it fails
// there, so the attack is armed); the gate does not verify the change.
func TestGateStartupAttacks(t *testing.T) {
	t.Parallel()
	needPytest(t)
	for _, c := range startupAttacks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			if c.userSite != nil {
				userSiteOf(t, home, c.userSite)
			}
			passed, out := oldLaunch(t, home, c.head(true))
			switch {
			case c.notArmed && passed:
				t.Fatalf("control: the old launch ran it; mark it armed\n%s", out)
			case !c.notArmed && !passed:
				t.Fatalf("control: the attack did not make the old launch pass; it is not armed\n%s", out)
			}
			if passed, out := oldLaunch(t, home, c.head(false)); passed {
				t.Fatalf("control: the wrong change passes under the old launch without the attack\n%s", out)
			}
			r := &host.Runner{Home: home}
			rep := gateReport(t, r, New(""), isoBase, c.head(true))
			if rep.Verdict == verify.Verified || len(rep.Credited()) > 0 {
				t.Fatalf("verdict %s, credited %+v; the wrong change must not be verified\ntests %+v", rep.Verdict, rep.Credited(), rep.Tests)
			}
		})
	}
}

// gateReport runs the whole gate on one change.
func gateReport(t *testing.T, r *host.Runner, a *Adapter, base, head map[string]string) *verify.Report {
	t.Helper()
	cfg := config.Default()
	cfg.Gate.FlakeRuns = 1
	g := &verify.Gate{Runner: r, Adapters: []verify.Adapter{a}}
	rep, err := g.Check(ctx(t), changeOf(t, base, head), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGateCorrectChangeWithRootModules: a correct change still verifies
// next to harmless start-up files and root modules named like the ones
// the attacks use, and a project whose tests need its own sitecustomize
// verifies when the base's configuration lets it run.
func TestGateCorrectChangeWithRootModules(t *testing.T) {
	t.Parallel()
	needPytest(t)
	fixed := map[string]string{"calc.py": pyFixed, "tests/test_calc.py": isoTest}
	needsStartup := "import builtins\nbuiltins.CALC_HIGH = 5\n"
	cases := []struct {
		name    string
		files   map[string]string
		base    map[string]string // added to isoBase
		test    string
		startup bool
	}{
		{name: "harmless sitecustomize.py and usercustomize.py", files: map[string]string{
			"sitecustomize.py": "import os\nos.environ.setdefault('CALC_MODE', 'fast')\n", "usercustomize.py": "X = 1\n"}},
		{name: "root modules named like pytest's and the standard library's", files: map[string]string{
			"pytest.py": "raise SystemExit('not pytest')\n", "json.py": "raise ImportError('not json')\n", "pluggy.py": "raise ImportError('not pluggy')\n"}},
		{name: "a child process imports the snapshot's code", files: map[string]string{"sitecustomize.py": "raise SystemExit('not run')\n"},
			test: isoTest + "\ndef test_child():\n    import subprocess, sys\n    out = subprocess.run([sys.executable, '-c', 'import calc; print(calc.clamp(9, 0, 5))'], capture_output=True, text=True)\n    assert out.stdout.strip() == '5', out.stderr\n"},
		{name: "startup_files: the tests need the project's sitecustomize", startup: true,
			base:  map[string]string{"sitecustomize.py": needsStartup},
			files: map[string]string{"sitecustomize.py": needsStartup},
			test:  isoBase["tests/test_calc.py"] + "\ndef test_high():\n    assert calc.clamp(9, 0, CALC_HIGH) == 5\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := map[string]string{}
			for p, s := range isoBase {
				base[p] = s
			}
			for p, s := range c.base {
				base[p] = s
			}
			head := map[string]string{}
			for p, s := range fixed {
				head[p] = s
			}
			for p, s := range c.files {
				head[p] = s
			}
			if c.test != "" {
				head["tests/test_calc.py"] = c.test
			}
			a := New("")
			a.StartupFiles = c.startup
			rep := gateReport(t, &host.Runner{Home: t.TempDir()}, a, base, head)
			if rep.Verdict != verify.Verified {
				t.Fatalf("verdict %s, want verified\nreasons %+v\ntamper %+v\ntests %+v", rep.Verdict, rep.Reasons, rep.Tamper, rep.Tests)
			}
		})
	}
}

// TestTamperStartupFiles: with startup_files on, a change to a start-up
// file on the snapshot's paths is test infrastructure; off, they never
// run and are plain files. A change to the snapshot's own .venv (its
// interpreter and site-packages run the tests) always is.
func TestTamperStartupFiles(t *testing.T) {
	t.Parallel()
	needPython(t)
	base := map[string]string{"calc.py": pyFixed, "sitecustomize.py": "X = 1\n"}
	head := map[string]string{"calc.py": pyFixed, "sitecustomize.py": "X = 2\n", "src/usercustomize.py": "Y = 1\n", "pkg/sitecustomize.py": "Z = 1\n",
		".venv/lib/python3.11/site-packages/x.pth": "import os\n"}
	for _, on := range []bool{false, true} {
		a := New("")
		a.StartupFiles = on
		fs, err := a.Tamper(context.Background(), changeOf(t, base, head))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			if f.Code == verify.FindingTestInfra {
				got = append(got, f.Path)
			}
		}
		want := "[.venv/lib/python3.11/site-packages/x.pth]"
		if on {
			want = "[.venv/lib/python3.11/site-packages/x.pth sitecustomize.py src/usercustomize.py]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("startup_files=%v: test_infra findings on %v, want %s\n%s", on, got, want, findingsText(fs))
		}
	}
}
