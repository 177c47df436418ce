package suite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/verify"
)

func TestGradeVerdict(t *testing.T) {
	reason := []verify.Reason{{Message: "no credited test"}}
	for _, c := range []struct {
		label   verify.Verdict
		rep     verify.Report
		err     error
		outcome bench.Outcome
		detail  string
	}{
		{verify.Verified, verify.Report{Verdict: verify.Verified}, nil, bench.Pass, ""},
		{verify.Tampered, verify.Report{Verdict: verify.Green, Reasons: reason}, nil, bench.Fail, "verdict green, label tampered: no credited test"},
		{verify.Green, verify.Report{Verdict: verify.Error, Reasons: reason}, nil, bench.Error, "the gate's verdict is error: no credited test"},
		{verify.Verified, verify.Report{Verdict: verify.Verified}, errors.New("ledger down"), bench.Error, "verdict verified, but the gate failed: ledger down"},
	} {
		o, d := gradeVerdict(c.label, &c.rep, c.err)
		if o != c.outcome || d != c.detail {
			t.Errorf("label %s, verdict %s, err %v: got %s %q, want %s %q", c.label, c.rep.Verdict, c.err, o, d, c.outcome, c.detail)
		}
	}
}

func TestRunVerifyRefusesBadOptions(t *testing.T) {
	eng := app.Open(app.Options{})
	root := moduleRoot(t)
	for _, o := range []VerifyOptions{
		{Root: root, Trials: 0},
		{Root: root, Trials: 1, Split: "test"},
		{Root: root, Trials: 1, Only: []string{"no-such-task"}},
		{Root: t.TempDir(), Trials: 1},
	} {
		rep, err := RunVerify(context.Background(), eng, o)
		if rep != nil || err == nil {
			t.Errorf("%+v: report %v, err %v; want a refusal", o, rep, err)
		}
	}
}

func TestBcodeBuildNamesTheModule(t *testing.T) {
	if b := BcodeBuild(); !strings.Contains(b, "go1.") {
		t.Fatalf("BcodeBuild() = %q, want the Go version at least", b)
	}
}
