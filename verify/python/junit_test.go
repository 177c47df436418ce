package python

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// A report as pytest 7 writes it (xunit2), trimmed to one case per kind.
const sampleReport = `<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="6" time="0.1">
<testcase classname="tests.test_a" name="test_pass" time="0.25" />
<testcase classname="tests.test_a" name="test_fail" time="0.001"><failure message="assert 1 == 2">&gt;   def test_fail(): assert 1 == 2
E   assert 1 == 2
tests/test_a.py:3: AssertionError</failure></testcase>
<testcase classname="tests.test_a.TestC" name="test_p[a-1]" time="0.000"><failure message="ValueError: bad">E   ValueError: bad
tests/test_a.py:9: ValueError</failure></testcase>
<testcase classname="tests.test_a" name="test_skip" time="0.000"><skipped type="pytest.skip" message="why">tests/test_a.py:11: why</skipped></testcase>
<testcase classname="tests.test_a" name="test_xf" time="0.000"><skipped type="pytest.xfail" message="" /></testcase>
<testcase classname="" name="tests.test_b" time="0.000"><error message="collection failure">ImportError while importing test module '/x/tests/test_b.py'.
E   ImportError: cannot import name 'new_func' from 'mod' (/x/mod.py)</error></testcase>
</testsuite></testsuites>`

func TestParseJUnit(t *testing.T) {
	t.Parallel()
	cases, err := ParseJUnit(strings.NewReader(sampleReport))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 6 {
		t.Fatalf("got %d cases, want 6: %+v", len(cases), cases)
	}
	c := cases[0]
	if c.ClassName != "tests.test_a" || c.Name != "test_pass" || c.Status != Passed || c.Time != 250*time.Millisecond {
		t.Errorf("passing case: %+v", c)
	}
	if c := cases[2]; c.Status != Failure || c.Message != "ValueError: bad" || c.key() != (key{"tests.test_a.TestC", "test_p"}) {
		t.Errorf("parametrized failing method: %+v key %+v", c, c.key())
	}
	if c := cases[4]; c.Status != Skipped || c.Type != "pytest.xfail" {
		t.Errorf("xfail: %+v", c)
	}
	if c := cases[5]; !c.isCollectionError() || c.Name != "tests.test_b" {
		t.Errorf("collection error: %+v", c)
	}
	if testKey("tests/test_a.py", "TestC::test_p") != cases[2].key() {
		t.Errorf("testKey %+v does not match the case's key %+v", testKey("tests/test_a.py", "TestC::test_p"), cases[2].key())
	}
}

func TestParseJUnitErrors(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty":     "",
		"not xml":   "ERROR: pytest crashed",
		"truncated": `<testsuites><testsuite><testcase classname="a" name="b">`,
		"mismatch":  `<testsuite></testcase>`,
	} {
		if _, err := ParseJUnit(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A bare <testsuite> (older pytest, other tools) is fine.
	cases, err := ParseJUnit(strings.NewReader(`<testsuite><testcase classname="m" name="test_a"/></testsuite>`))
	if err != nil || len(cases) != 1 {
		t.Errorf("bare testsuite: %v %+v", err, cases)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	fail := func(msg, text string) Case {
		return Case{ClassName: "t", Name: "test_x", Status: Failure, Message: msg, Text: text}
	}
	for _, c := range []struct {
		name string
		in   Case
		want verify.Outcome
	}{
		{"pass", Case{Status: Passed}, verify.Pass},
		{"skip", Case{Status: Skipped, Type: "pytest.skip", Message: "why"}, verify.Skip},
		{"assert", fail("assert 1 == 2", "E   assert 1 == 2\nt.py:3: AssertionError"), verify.Fail},
		{"assert without traceback", fail("assert 1 == 2", ""), verify.Fail},
		{"pytest.fail", fail("Failed: nope", "E   Failed: nope\nt.py:3: Failed"), verify.Fail},
		{"value error", fail("ValueError: bad", "E   ValueError: bad\nmod.py:9: ValueError"), verify.Fail},
		{"zero division", fail("ZeroDivisionError: division by zero", "mod.py:2: ZeroDivisionError"), verify.Fail},
		{"custom error with module", fail("mod.ParseError: x", "mod.py:2: ParseError"), verify.Fail},
		{"key error", fail("KeyError: 'k'", "mod.py:2: KeyError"), verify.Fail},
		{"missing module attribute", fail("AttributeError: module 'mod' has no attribute 'new_func'", "t.py:5: AttributeError"), verify.MissingSymbol},
		{"missing method", fail("AttributeError: 'Calc' object has no attribute 'sub'", "t.py:5: AttributeError"), verify.MissingSymbol},
		{"none attribute is a bug", fail("AttributeError: 'NoneType' object has no attribute 'x'", "t.py:5: AttributeError"), verify.Fail},
		{"other attribute error", fail("AttributeError: can't set attribute", "t.py:5: AttributeError"), verify.Fail},
		{"name error", fail("NameError: name 'helper' is not defined", "t.py:5: NameError"), verify.MissingSymbol},
		{"unbound local is a bug", fail("UnboundLocalError: cannot access local variable 'x'", "t.py:5: UnboundLocalError"), verify.Fail},
		{"new kwarg", fail("TypeError: f() got an unexpected keyword argument 'y'", "t.py:7: TypeError"), verify.MissingSymbol},
		{"too many args", fail("TypeError: f() takes 1 positional argument but 2 were given", "t.py:7: TypeError"), verify.MissingSymbol},
		{"missing arg", fail("TypeError: f() missing 1 required positional argument: 'x'", "t.py:7: TypeError"), verify.MissingSymbol},
		{"other type error", fail("TypeError: unsupported operand type(s) for +: 'int' and 'str'", "mod.py:2: TypeError"), verify.Fail},
		{"import in test", fail("ImportError: cannot import name 'g' from 'mod'", "t.py:3: ImportError"), verify.ImportError},
		{"module not found", fail("ModuleNotFoundError: No module named 'newpkg'", "t.py:3: ModuleNotFoundError"), verify.ImportError},
		{"missing fixture", Case{ClassName: "t", Name: "test_x", Status: Errored, Message: "failed on setup", Text: "E       fixture 'db' not found"}, verify.MissingSymbol},
		{"setup error", Case{ClassName: "t", Name: "test_x", Status: Errored, Message: "failed on setup", Text: "E   RuntimeError: no db\nconftest.py:4: RuntimeError"}, verify.Fail},
		{"collection import error", Case{Name: "tests.test_b", Status: Errored, Message: "collection failure", Text: "ImportError while importing test module\nE   ImportError: cannot import name 'x'"}, verify.ImportError},
		{"collection attribute error", Case{Name: "tests.test_b", Status: Errored, Message: "collection failure", Text: "tests/test_b.py:3: in <module>\n    X = mod.NEW\nE   AttributeError: module 'mod' has no attribute 'NEW'"}, verify.MissingSymbol},
		{"collection syntax error", Case{Name: "tests.test_b", Status: Errored, Message: "collection failure", Text: "E     File \"t.py\", line 1\nE       def (\nE   SyntaxError: invalid syntax"}, verify.ImportError},
	} {
		got, detail := Classify(c.in)
		if got != c.want {
			t.Errorf("%s: got %s (%q), want %s", c.name, got, detail, c.want)
		}
	}
}

func TestParseLiveLog(t *testing.T) {
	t.Parallel()
	log := `{"nodeid": "tests/test_a.py::TestC::test_m[1]", "when": "call", "outcome": "failed", "xfail": false, "message": "ValueError: x", "text": "E   ValueError: x\ntests/test_a.py:3: ValueError", "duration": 0.5}
{"nodeid": "tests/test_a.py::test_s", "when": "setup", "outcome": "skipped", "xfail": true, "message": "", "text": "", "duration": 0}
{"nodeid": "tests/test_b.py", "when": "collect", "outcome": "failed", "xfail": false, "message": "collection failure", "text": "E   ModuleNotFoundError: No module named 'x'", "duration": 0}
{"nodeid": "tests/test_a.py::test_torn", "when": "ca`
	cases := parseLiveLog([]byte(log))
	if len(cases) != 3 {
		t.Fatalf("got %d cases, want 3 (the torn line dropped): %+v", len(cases), cases)
	}
	if c := cases[0]; c.key() != testKey("tests/test_a.py", "TestC::test_m") || c.Name != "test_m[1]" || c.Time != 500*time.Millisecond {
		t.Errorf("parametrized method: %+v", c)
	}
	if o, _ := Classify(cases[0]); o != verify.Fail {
		t.Errorf("value error from the log: %s", o)
	}
	if o, _ := Classify(cases[1]); o != verify.Skip {
		t.Errorf("xfail from the log: %s", o)
	}
	if o, _ := Classify(cases[2]); o != verify.ImportError || !cases[2].isCollectionError() || cases[2].Name != "tests.test_b" {
		t.Errorf("collection error from the log: %s %+v", o, cases[2])
	}
}

// FuzzParseJUnit checks that no report, however broken, panics the parser
// or the classifier, and that every case classifies to a known outcome.
// The seed corpus in testdata/fuzz/FuzzParseJUnit holds real pytest reports.
func FuzzParseJUnit(f *testing.F) {
	f.Add([]byte(sampleReport))
	f.Add([]byte(`<testsuite><testcase classname="" name=""><error/></testcase></testsuite>`))
	known := map[verify.Outcome]bool{verify.Pass: true, verify.Fail: true, verify.Skip: true, verify.ImportError: true, verify.MissingSymbol: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := ParseJUnit(strings.NewReader(string(data)))
		if err != nil {
			if cases != nil {
				t.Fatalf("cases %+v returned with error %v", cases, err)
			}
			return
		}
		for _, c := range cases {
			o, _ := Classify(c)
			if !known[o] {
				t.Fatalf("case %+v classified as %q", c, o)
			}
			_ = c.key()
		}
	})
}

// TestDetailKeepsTheRaiseSite: however long the traceback, the detail
// ends with where the exception was raised, which decides credit.
func TestDetailKeepsTheRaiseSite(t *testing.T) {
	var tb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&tb, "    frame line %d\n", i)
	}
	tb.WriteString("E   TypeError: scale() takes 1 positional argument but 2 were given\n\npkg/calc.py:5: TypeError")
	c := Case{ClassName: "tests.test_calc", Name: "test_total", Status: Failure, Message: "TypeError: scale() takes 1 positional argument but 2 were given", Text: tb.String()}
	_, d := Classify(c)
	if raiseSite(d) != "pkg/calc.py" {
		t.Fatalf("the detail lost the raise site:\n%s", d)
	}
	if n := strings.Count(d, "\n"); n > 25 {
		t.Errorf("detail of %d lines, want it capped", n+1)
	}
}
