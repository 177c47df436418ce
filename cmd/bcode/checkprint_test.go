package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// TestPrintReportShowsInfrastructureBesideTheTests: a person's CI move is
// listed under its own heading, and the test part is never silent: the
// table, or a line saying why there is none.
func TestPrintReportShowsInfrastructureBesideTheTests(t *testing.T) {
	rep := &verify.Report{Verdict: verify.Verified, Base: "b", Head: "h",
		Tests:          []verify.TestReport{{Name: "TestSignZero", File: "sign_test.go", BaseOutcome: verify.Fail, HeadOutcome: verify.Pass, Credited: true, ReasonText: "fails on the base by assertion and passes with the change"}},
		Infrastructure: []verify.Finding{{Code: verify.FindingCIChanged, Path: ".travis.yml", Message: "CI definition deleted"}},
	}
	var b bytes.Buffer
	printReport(&b, rep)
	out := b.String()
	for _, want := range []string{"TestSignZero", "infrastructure changes", "ci_changed  .travis.yml  CI definition deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tamper findings") {
		t.Errorf("a finding beside the verdict printed as tampering:\n%s", out)
	}
	for _, tc := range []struct {
		candidates int
		want       string
	}{{0, "none is a candidate"}, {3, "3 candidates, none new, modified or failing"}} {
		b.Reset()
		printReport(&b, &verify.Report{Verdict: verify.Green, Candidates: tc.candidates})
		if !strings.Contains(b.String(), "tests: "+tc.want) {
			t.Errorf("%d candidates, no test lines: output lacks %q:\n%s", tc.candidates, tc.want, b.String())
		}
	}
}
