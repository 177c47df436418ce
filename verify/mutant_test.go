package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/sandbox/shown/showntest"
)

// TestMutantReportedRule pins the one reported rule for every verdict: what
// a user must see (survivors as warnings; not covered, timeouts and
// mutants without a verdict as notices), what only a format with a place
// for suppressed results shows (ignored), and what is never a finding.
func TestMutantReportedRule(t *testing.T) {
	for _, c := range []struct {
		v        MutantVerdict
		want     MutantAttention
		reported bool
	}{
		{MutantSurvived, MutantWarning, true},
		{MutantNotCovered, MutantNotice, true},
		{MutantTimeout, MutantNotice, true},
		{MutantNoVerdict, MutantNotice, true},
		{MutantIgnored, MutantSuppressed, false},
		{MutantKilled, MutantQuiet, false},
		{MutantUnviable, MutantQuiet, false},
		{MutantPruned, MutantQuiet, false},
		{"", MutantNotice, true},                   // a mutant the run left blank is never hidden
		{"from_a_newer_bcode", MutantNotice, true}, // nor a verdict this version does not know
	} {
		if got := c.v.Attention(); got != c.want {
			t.Errorf("%q: attention %d, want %d", c.v, got, c.want)
		}
		if got := c.v.Reported(); got != c.reported {
			t.Errorf("%q: reported %v, want %v", c.v, got, c.reported)
		}
	}
}

func TestMutantMessage(t *testing.T) {
	base := Mutant{ID: "m1", File: "p/p.go", Line: 4, Col: 9, EndLine: 4, EndCol: 15, Operator: "conditional_boundary",
		Original: "n > 10", Mutated: "n >= 10"}
	with := func(f func(*Mutant)) Mutant { m := base; f(&m); return m }
	for _, c := range []struct {
		m    Mutant
		want string
	}{
		{with(func(m *Mutant) { m.Verdict, m.Tests = MutantSurvived, []string{"TestA", "TestB/case"} }),
			"Mutant survived: `n > 10` → `n >= 10` (conditional_boundary): no test failed; tests run: TestA, TestB/case"},
		{with(func(m *Mutant) { m.Verdict = MutantNotCovered; m.Detail = "no test of the package reaches this line" }),
			"Mutant not covered: `n > 10` → `n >= 10` (conditional_boundary): no test reaches this line"},
		{with(func(m *Mutant) { m.Verdict = MutantTimeout }),
			"Mutant timed out: `n > 10` → `n >= 10` (conditional_boundary): the tests did not finish, which proves nothing"},
		{with(func(m *Mutant) { m.Verdict, m.Detail = MutantTimeout, "over 2s of CPU" }),
			"Mutant timed out: `n > 10` → `n >= 10` (conditional_boundary): the tests did not finish, which proves nothing: over 2s of CPU"},
		{with(func(m *Mutant) { m.Verdict, m.Detail = MutantNoVerdict, "the run was cancelled" }),
			"Mutant without a verdict: `n > 10` → `n >= 10` (conditional_boundary): the run was cancelled"},
		{with(func(m *Mutant) { m.Verdict, m.IgnoreReason = MutantIgnored, "the boundary is checked upstream" }),
			"Mutant ignored: `n > 10` → `n >= 10` (conditional_boundary): the boundary is checked upstream"},
		{with(func(m *Mutant) { m.Verdict, m.KilledBy = MutantKilled, "TestA" }),
			"Mutant killed: `n > 10` → `n >= 10` (conditional_boundary) by TestA"},
		{with(func(m *Mutant) { m.Verdict, m.Detail = MutantUnviable, "does not build" }),
			"Mutant unviable: `n > 10` → `n >= 10` (conditional_boundary): does not build"},
		{with(func(m *Mutant) { m.Original, m.Mutated, m.Verdict = "a &&\n\tb", "!(a &&\n\tb)", MutantNotCovered }),
			"Mutant not covered: `a && b` → `!(a && b)` (conditional_boundary): no test reaches this line"},
	} {
		if got := c.m.Message(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.m.Verdict, got, c.want)
		}
	}
}

// TestMutantMessageShowsAttacks: whatever a file, a test name or a detail
// holds, the message is one line with no hidden rune, and each planted
// string is in it in its visible form.
func TestMutantMessageShowsAttacks(t *testing.T) {
	opts := showntest.Options{}
	showntest.Run(t, opts, func(t *testing.T, cs []showntest.Case) []byte {
		var out strings.Builder
		for _, c := range cs {
			for _, m := range []Mutant{
				{Verdict: MutantSurvived, Operator: c.Text, Original: "a", Mutated: "b", Tests: []string{c.Text}},
				{Verdict: MutantNoVerdict, Operator: "op", Original: "a", Mutated: "b", Detail: c.Text},
				{Verdict: MutantIgnored, Operator: "op", Original: "a", Mutated: "b", IgnoreReason: c.Text},
				{Verdict: MutantKilled, Operator: "op", Original: "a", Mutated: "b", KilledBy: c.Text},
			} {
				msg := m.Message()
				if strings.ContainsAny(msg, "\r\n") {
					t.Errorf("%s: message is not one line: %q", c.Name, msg)
				}
				out.WriteString(msg + "\n")
			}
		}
		return []byte(out.String())
	})
	// Code is folded to one line, its controls shown.
	m := Mutant{Verdict: MutantSurvived, Original: "x\x1b[2K\ny", Mutated: "z"}
	if got := m.Rewrite(); got != "`"+shown.Flat("x\x1b[2K\ny")+"` → `z`" || strings.ContainsAny(got, "\x1b\n") {
		t.Errorf("rewrite %q", got)
	}
}

func TestMutantDiff(t *testing.T) {
	src := "package p\n\nfunc F(n int) bool {\n\treturn n > 10\n}\n"
	m := Mutant{ID: "m1", File: "p/p.go", Line: 4, Col: 9, EndLine: 4, EndCol: 15, Operator: "conditional_boundary",
		Original: "n > 10", Mutated: "n >= 10", Verdict: MutantSurvived}
	d, err := m.Diff(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- a/p/p.go", "@@ -1,5 +1,5 @@", "-\treturn n > 10", "+\treturn n >= 10", " }"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	stale := m
	stale.Original = "n < 10"
	if _, err := stale.Diff(src); !errors.Is(err, ErrStaleMutant) || !strings.Contains(err.Error(), "run evidence again") {
		t.Errorf("a stale mutant gave %v", err)
	}
	if _, err := m.Diff(""); !errors.Is(err, ErrMutantSource) {
		t.Errorf("no source gave %v", err)
	}
	for _, bad := range []Mutant{
		{Line: 9, EndLine: 9, Col: 1, EndCol: 2},   // past the end
		{Line: 4, EndLine: 4, Col: 0, EndCol: 7},   // column 0
		{Line: 4, EndLine: 4, Col: 20, EndCol: 50}, // past the line
		{Line: 4, EndLine: 3, Col: 9, EndCol: 15},  // ends before it starts
	} {
		bad.Original = "n > 10"
		if _, err := bad.Diff(src); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
