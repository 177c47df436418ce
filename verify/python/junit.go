package python

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// Status is how a JUnit test case ended.
type Status string

const (
	Passed  Status = "passed"
	Failure Status = "failure" // the test failed (an assertion or an exception)
	Errored Status = "error"   // setup, teardown or collection failed
	Skipped Status = "skipped" // skip and xfail
)

// Case is one <testcase> of a pytest JUnit report (or one record of the
// live log bcode's plugin writes, converted to the same shape).
type Case struct {
	// ClassName is the dotted module path plus classes
	// ("tests.test_a.TestC"); empty for a module that failed to collect.
	ClassName string
	// Name is the function with any parameters ("test_x[1]"), or the
	// dotted module for a collection failure.
	Name    string
	Time    time.Duration
	Status  Status
	Type    string // the type attribute of <failure>/<error>/<skipped>
	Message string
	Text    string
}

// maxJUnitBytes bounds how much of a report is read: a runaway test that
// prints gigabytes into captured output must not exhaust memory.
const maxJUnitBytes = 64 << 20

// ParseJUnit reads every <testcase> of a JUnit XML report, wherever it is
// nested (<testsuites>, <testsuite>, or bare). A report that is not
// well-formed XML is an error naming the offset.
func ParseJUnit(r io.Reader) ([]Case, error) {
	lr := &io.LimitedReader{R: r, N: maxJUnitBytes + 1}
	dec := xml.NewDecoder(lr)
	dec.Strict = true
	var out []Case
	sawRoot := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if lr.N <= 0 {
				return nil, fmt.Errorf("junit report larger than %d bytes", maxJUnitBytes)
			}
			return nil, fmt.Errorf("junit report: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		sawRoot = true
		if se.Name.Local != "testcase" {
			continue
		}
		var tc xmlCase
		if err := dec.DecodeElement(&tc, &se); err != nil {
			return nil, fmt.Errorf("junit report: testcase: %w", err)
		}
		out = append(out, tc.toCase())
	}
	if !sawRoot {
		return nil, errors.New("junit report: no XML elements")
	}
	return out, nil
}

type xmlOutcome struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type xmlCase struct {
	ClassName string       `xml:"classname,attr"`
	Name      string       `xml:"name,attr"`
	Time      string       `xml:"time,attr"`
	Failure   []xmlOutcome `xml:"failure"`
	Error     []xmlOutcome `xml:"error"`
	Skipped   []xmlOutcome `xml:"skipped"`
}

func (x xmlCase) toCase() Case {
	c := Case{ClassName: x.ClassName, Name: x.Name, Status: Passed}
	if secs, err := strconv.ParseFloat(x.Time, 64); err == nil && secs > 0 && secs < 1e9 {
		c.Time = time.Duration(secs * float64(time.Second))
	}
	// A test that fails and then errors in teardown has both; the failure
	// says more about the test.
	switch {
	case len(x.Failure) > 0:
		c.Status, c.Type, c.Message, c.Text = Failure, x.Failure[0].Type, x.Failure[0].Message, x.Failure[0].Text
	case len(x.Error) > 0:
		c.Status, c.Type, c.Message, c.Text = Errored, x.Error[0].Type, x.Error[0].Message, x.Error[0].Text
	case len(x.Skipped) > 0:
		c.Status, c.Type, c.Message, c.Text = Skipped, x.Skipped[0].Type, x.Skipped[0].Message, x.Skipped[0].Text
	}
	return c
}

// isCollectionError reports whether c stands for a module pytest could not
// collect rather than for a test.
func (c Case) isCollectionError() bool {
	return c.ClassName == "" && (c.Status == Errored || c.Status == Failure)
}

var (
	// The last line of a pytest traceback: "tests/test_a.py:7: ValueError".
	tracebackTail = regexp.MustCompile(`(?m)^\S.*:\d+: ([A-Za-z_][\w.]*)\s*$`)
	// "ValueError: bad" at the start of a message.
	messageType = regexp.MustCompile(`^([A-Za-z_][\w.]*): `)
	// "E   ImportError: cannot import name ..." inside a traceback.
	eLineType = regexp.MustCompile(`(?m)^E\s+([A-Za-z_][\w.]*)(?::|$)`)

	signatureMismatch = regexp.MustCompile(`unexpected keyword argument|takes (no|\d+|from \d+ to \d+) (positional )?arguments?|missing \d+ required (positional|keyword-only) arguments?|got multiple values for argument|got some positional-only arguments passed as keyword`)
	missingFixture    = regexp.MustCompile(`fixture '[^']*' not found`)
)

// exceptionType is the exception a failure ended with, without its module
// ("mod.CustomError" -> "CustomError"), or "" when the text names none.
func exceptionType(c Case) string {
	t := ""
	if ms := tracebackTail.FindAllStringSubmatch(c.Text, -1); len(ms) > 0 {
		t = ms[len(ms)-1][1]
	} else if m := messageType.FindStringSubmatch(c.Message); m != nil {
		t = m[1]
	} else if ms := eLineType.FindAllStringSubmatch(c.Text, -1); len(ms) > 0 {
		t = ms[len(ms)-1][1]
	} else if strings.HasPrefix(c.Message, "assert ") {
		t = "AssertionError"
	}
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	return t
}

// Classify turns one case into an outcome and a short detail. The rules
// decide what the gate may credit, so they lean towards "not a behavioural
// failure" whenever the text says a name is missing.
func Classify(c Case) (verify.Outcome, string) {
	switch c.Status {
	case Passed:
		return verify.Pass, ""
	case Skipped:
		what := "skipped"
		if strings.Contains(c.Type, "xfail") {
			what = "xfail"
		}
		return verify.Skip, firstLines(strings.TrimSpace(what+": "+c.Message), 20)
	}
	text := c.Message + "\n" + c.Text
	if c.isCollectionError() {
		return classifyCollection(c)
	}
	if missingFixture.MatchString(text) {
		return verify.MissingSymbol, detail("missing fixture", c)
	}
	typ := exceptionType(c)
	switch typ {
	case "ImportError", "ModuleNotFoundError":
		return verify.ImportError, detail(typ, c)
	case "AttributeError":
		// A None where an object was expected is a bug in the code under
		// test, not a name the change adds.
		if strings.Contains(text, "has no attribute") && !strings.Contains(text, "'NoneType' object has no attribute") {
			return verify.MissingSymbol, detail(typ, c)
		}
	case "NameError":
		if strings.Contains(text, "is not defined") {
			return verify.MissingSymbol, detail(typ, c)
		}
	case "TypeError":
		if signatureMismatch.MatchString(text) {
			return verify.MissingSymbol, detail(typ, c)
		}
	}
	return verify.Fail, detail(typ, c)
}

// classifyCollection classifies a module pytest could not import.
func classifyCollection(c Case) (verify.Outcome, string) {
	typ := ""
	if ms := eLineType.FindAllStringSubmatch(c.Text, -1); len(ms) > 0 {
		typ = ms[len(ms)-1][1]
		if i := strings.LastIndexByte(typ, '.'); i >= 0 {
			typ = typ[i+1:]
		}
	}
	switch {
	case typ == "AttributeError" || typ == "NameError":
		return verify.MissingSymbol, detail("collection failed: "+typ, c)
	case typ == "":
		if strings.Contains(c.Text, "ImportError") || strings.Contains(c.Text, "ModuleNotFoundError") {
			typ = "ImportError"
		}
	}
	return verify.ImportError, detail(strings.TrimSpace("collection failed: "+typ), c)
}

// detail is the first lines of a failure, led by its exception type.
func detail(typ string, c Case) string {
	head := strings.TrimSpace(firstLine(c.Message))
	if typ != "" && !strings.HasPrefix(head, typ) {
		head = strings.TrimSpace(typ + ": " + head)
	}
	text := firstLines(head+"\n"+c.Text, 20)
	// Where it was raised (the traceback's last line) stays, however long
	// the traceback: whether the code under test raised it decides credit.
	if site := raiseSiteLine.FindAllString(c.Text, -1); len(site) > 0 && !strings.Contains(text, site[len(site)-1]) {
		text += "\n…\n" + site[len(site)-1]
	}
	return text
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// key is how a test is matched to cases: the JUnit class name and the
// function name without parameters.
type key struct{ class, name string }

// mangle turns a pytest node id into a JUnit key the way pytest's junitxml
// does: "tests/test_a.py::TestC::test_m[1]" -> {"tests.test_a.TestC", "test_m"}.
func mangle(nodeid string) key {
	p, _, _ := strings.Cut(nodeid, "[")
	parts := strings.Split(p, "::")
	parts[0] = dottedPath(parts[0])
	if len(parts) == 1 {
		return key{"", parts[0]}
	}
	return key{strings.Join(parts[:len(parts)-1], "."), parts[len(parts)-1]}
}

// dottedPath is a file's JUnit form: "tests/test_a.py" -> "tests.test_a".
func dottedPath(file string) string {
	return strings.TrimSuffix(strings.ReplaceAll(file, "/", "."), ".py")
}

// keyOf is the key of a case, parameters dropped.
func (c Case) key() key {
	n, _, _ := strings.Cut(c.Name, "[")
	return key{c.ClassName, n}
}

// testKey is the key of a requested test.
func testKey(file, name string) key { return mangle(file + "::" + name) }
