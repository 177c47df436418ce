package python

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// logRecord is one line of bcode_pytest_log, every field any record kind
// carries.
type logRecord struct {
	NodeID      string  `json:"nodeid"`
	When        string  `json:"when"`
	Outcome     string  `json:"outcome"`
	XFail       bool    `json:"xfail"`
	Message     string  `json:"message"`
	Text        string  `json:"text"`
	Duration    float64 `json:"duration"`
	Raw         string  `json:"raw"`
	RawText     string  `json:"raw_text"`
	XFailMarker bool    `json:"xfail_marker"`
}

// resultsFromLog turns bcode's own record of a pytest run into one result
// per node ID (parametrized cases and unittest methods included) and one
// unit per test file that collected or failed to. A report that says a test
// passed (or skipped) while the test call raised is the work of a plugin or
// hook of the repository: the result is the raised failure, marked with
// verify.ReportAlteredMarker.
func resultsFromLog(data []byte) ([]verify.TestResult, []verify.UnitResult) {
	l := &pytestLog{tests: map[string]*logTest{}, units: map[string]verify.UnitResult{}}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec logRecord
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil || rec.NodeID == "" {
			continue
		}
		l.add(rec)
	}
	return l.results()
}

// pytestLog is resultsFromLog's tally: tests and units by node ID and file,
// each in the order the log first named it.
type pytestLog struct {
	order     []string
	tests     map[string]*logTest
	unitOrder []string
	units     map[string]verify.UnitResult
}

// logTest is what the log says of one test so far.
type logTest struct {
	test     verify.Test
	deciding *Case
	rank     int
	dur      time.Duration
	raw      logRecord
	sawCall  bool
}

// setUnit records a unit's outcome; a failure is not overwritten.
func (l *pytestLog) setUnit(u verify.UnitResult) {
	old, ok := l.units[u.Unit]
	if !ok {
		l.unitOrder = append(l.unitOrder, u.Unit)
	}
	if !ok || old.Outcome == verify.Pass {
		l.units[u.Unit] = u
	}
}

func (l *pytestLog) get(nodeid string) *logTest {
	a := l.tests[nodeid]
	if a == nil {
		file, name, _ := strings.Cut(nodeid, "::")
		a = &logTest{test: verify.Test{Language: "python", Package: file, File: file, Name: name}}
		l.tests[nodeid] = a
		l.order = append(l.order, nodeid)
	}
	return a
}

// add takes one record: a file's collection, a deselected test, or a
// phase (setup, call, teardown) of a test.
func (l *pytestLog) add(rec logRecord) {
	switch rec.When {
	case "collected":
		l.setUnit(verify.UnitResult{Unit: rec.NodeID, Outcome: verify.Pass})
		return
	case "collect":
		file, _, _ := strings.Cut(rec.NodeID, "::")
		o, d := classifyCollection(Case{Status: Errored, Message: rec.Message, Text: rec.Text})
		l.setUnit(verify.UnitResult{Unit: file, Outcome: o, Detail: d})
		return
	case "deselected":
		if !strings.Contains(rec.NodeID, "::") {
			return
		}
		a := l.get(rec.NodeID)
		if a.deciding == nil {
			a.deciding = &Case{Status: Skipped, Message: "deselected (by -k/-m, configuration or a collection hook)", Type: "deselected"}
			a.rank = 0
		}
		return
	}
	if !strings.Contains(rec.NodeID, "::") {
		return
	}
	a := l.get(rec.NodeID)
	c := Case{ClassName: mangle(rec.NodeID).class, Message: rec.Message, Text: rec.Text}
	if c.ClassName == "" {
		c.ClassName = "?" // a test, never a collection error
	}
	if rec.Duration > 0 && rec.Duration < 1e9 {
		a.dur += time.Duration(rec.Duration * float64(time.Second))
	}
	c.Status, c.Type = recordStatus(rec.When, rec.Outcome, rec.XFail)
	if rec.When == "call" {
		a.sawCall = true
		a.raw = rec
	}
	// Failures outrank skips, skips outrank passes; the first of a
	// rank decides.
	r := map[Status]int{Passed: 1, Skipped: 2, Failure: 3, Errored: 3}[c.Status]
	if a.deciding == nil || r > a.rank {
		cc := c
		a.deciding, a.rank = &cc, r
	}
}

// results is one result per test and one unit per file, in log order; a
// test's file that reported no collection counts as collected.
func (l *pytestLog) results() ([]verify.TestResult, []verify.UnitResult) {
	var out []verify.TestResult
	for _, id := range l.order {
		a := l.tests[id]
		res := verify.TestResult{Test: a.test, Duration: a.dur}
		if a.deciding == nil {
			res.Outcome = verify.NotRun
		} else if a.deciding.Type == "deselected" {
			res.Outcome, res.Detail = verify.Skip, "deselected: "+a.deciding.Message
		} else {
			res.Outcome, res.Detail = Classify(*a.deciding)
		}
		if altered, why := alteredReport(a.sawCall, a.raw); altered {
			res.Outcome = verify.Fail
			res.Detail = verify.ReportAlteredMarker + " " + why
		}
		out = append(out, res)
		file := a.test.File
		if _, ok := l.units[file]; !ok {
			l.setUnit(verify.UnitResult{Unit: file, Outcome: verify.Pass})
		}
	}
	var us []verify.UnitResult
	for _, u := range l.unitOrder {
		us = append(us, l.units[u])
	}
	return out, us
}

// alteredReport says whether the final report of a test contradicts what
// its call raised: a failure reported as a pass, or as a skip without an
// xfail marker.
func alteredReport(sawCall bool, raw logRecord) (bool, string) {
	if !sawCall || raw.Raw != "failed" {
		return false, ""
	}
	switch {
	case raw.Outcome == "passed":
		return true, fmt.Sprintf("reported as passed, but the test raised %s", firstLine(raw.RawText))
	case raw.Outcome == "skipped" && !raw.XFailMarker:
		return true, fmt.Sprintf("reported as skipped, but the test raised %s", firstLine(raw.RawText))
	}
	return false, ""
}

// recordStatus is how one phase record of bcode's pytest log ended, as a
// JUnit case status (and type, for an xfail).
func recordStatus(when, outcome string, xfail bool) (Status, string) {
	switch {
	case outcome == "passed":
		return Passed, ""
	case outcome == "skipped" && xfail:
		return Skipped, "pytest.xfail"
	case outcome == "skipped":
		return Skipped, ""
	case when == "call":
		return Failure, ""
	}
	return Errored, ""
}
