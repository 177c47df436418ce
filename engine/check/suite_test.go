package check_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// suiteDir holds the labelled changes; its README.md documents the format.
const suiteDir = "testdata/suite"

// suiteParallel is how many cases run at once: the machine has two cores,
// and each case already runs `go test` or pytest several times.
const suiteParallel = 2

// caseTimeout bounds one case; the slowest (a test that times out on the
// base after 3s) needs well under a minute alone, but four cases passed
// 3 minutes at load 45 with no verdict yet: the bound catches hangs, not
// slowness.
const caseTimeout = 8 * time.Minute

// labelledCase is one change of the suite with its truth label.
type labelledCase = labelled.Case

var validVerdicts = labelled.Verdicts

func loadSuite(dir string) ([]labelledCase, error) { return labelled.Load(dir) }

// caseOutcome is one case's label against the gate's verdict.
type caseOutcome struct {
	name    string
	kind    string
	label   verify.Verdict
	verdict verify.Verdict
	dur     time.Duration
}

// TestLabelledSuite runs the gate on every labelled change and requires the
// label's verdict; at the end, no case labelled anything but verified may
// have been accepted as verified.
func TestLabelledSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the labelled suite runs real go test and pytest for ~60 changes; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the suite needs go on PATH: %v", err)
	}
	cases, err := loadSuite(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("the suite has %d cases; the evidence needs at least 40", len(cases))
	}
	havePytest := testenv.HaveSystemPytest()

	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatalf("opening the ledger: %v", err)
	}
	t.Cleanup(func() { led.Close() })

	var (
		mu       sync.Mutex
		outcomes []caseOutcome
	)
	slots := make(chan struct{}, suiteParallel)
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				if c.Python {
					testenv.Need(t, havePytest, "Python case: /usr/bin/python3 -m pytest is unavailable (apt-get install python3-pytest)")
				}
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()

				cctx, cancel := context.WithTimeout(ctx, caseTimeout)
				defer cancel()
				dir := t.TempDir()
				if err := c.Build(cctx, dir); err != nil {
					t.Fatalf("building the repository: %v", err)
				}
				base, head := c.Revisions()
				start := time.Now()
				// Through a host sandbox that audits confinement: every
				// command the gate runs must stay in its scratch
				// directory, as it must inside the Docker sandbox.
				audit := &auditSandbox{inner: host.Sandbox{}}
				rep, err := check.Run(cctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: head, Sandbox: audit, Recorder: led})
				audit.verify(t)
				dur := time.Since(start)
				if rep == nil {
					t.Fatalf("check.Run returned no report: %v", err)
				}
				if err != nil {
					t.Errorf("check.Run: %v", err)
				}
				t.Logf("%s in %.1fs; phases (ms) %v", rep.Verdict, dur.Seconds(), rep.Timings)
				mu.Lock()
				outcomes = append(outcomes, caseOutcome{c.Name, c.Kind, c.Verdict, rep.Verdict, dur})
				mu.Unlock()
				if rep.Verdict != c.Verdict {
					t.Errorf("verdict %s, label %s (%s)\nwhy the label: %s\n%s", rep.Verdict, c.Verdict, c.Kind, c.Why, describe(rep))
				}
				for _, code := range c.Findings {
					if !hasFinding(rep, code) {
						t.Errorf("no %s tamper finding; got %v", code, rep.Tamper)
					}
				}
				if c.Verdict == verify.Verified && len(rep.Credited()) == 0 {
					t.Errorf("labelled verified but no test was credited")
				}
			})
		}
	})

	// Every run that reached the gate is in the ledger with its verdict.
	// (A base config that does not parse ends the check before the gate
	// and is not recorded; those are the error cases.)
	runs, err := led.Verifications(ctx, "", 0)
	if err != nil {
		t.Fatalf("listing the ledger: %v", err)
	}
	inLedger := map[verify.Verdict]int{}
	for _, r := range runs {
		inLedger[verify.Verdict(r.Verdict)]++
	}
	reached := map[verify.Verdict]int{}
	for _, o := range outcomes {
		reached[o.verdict]++
	}
	for _, v := range validVerdicts {
		if v != verify.Error && inLedger[v] != reached[v] {
			t.Errorf("the ledger holds %d %s runs; the suite reached %d", inLedger[v], v, reached[v])
		}
	}

	fa, fr, right := tally(outcomes)
	t.Logf("labelled suite: %d cases run, %d match, false acceptance %d, false rejection %d", len(outcomes), right, fa, fr)
	for _, o := range outcomes {
		if o.label != o.verdict {
			t.Logf("  mismatch %-34s label %-8s verdict %-8s", o.name, o.label, o.verdict)
		}
	}
	if fa != 0 {
		t.Errorf("false acceptance is %d: cases not labelled verified were marked verified", fa)
	}
}

// tally counts false acceptances (a non-verified label marked verified),
// false rejections (a verified label not marked verified) and matches.
func tally(outs []caseOutcome) (fa, fr, right int) {
	for _, o := range outs {
		switch {
		case o.label != verify.Verified && o.verdict == verify.Verified:
			fa++
		case o.label == verify.Verified && o.verdict != verify.Verified:
			fr++
		}
		if o.label == o.verdict {
			right++
		}
	}
	return fa, fr, right
}

// hasFinding looks in the tamper findings and in the infrastructure
// findings that stand beside the verdict.
func hasFinding(rep *verify.Report, code string) bool {
	for _, f := range append(append([]verify.Finding{}, rep.Tamper...), rep.Infrastructure...) {
		if f.Code == code {
			return true
		}
	}
	return false
}

// describe is the part of a report that explains a wrong verdict.
func describe(rep *verify.Report) string {
	var b strings.Builder
	for _, r := range rep.Reasons {
		fmt.Fprintf(&b, "  reason %s: %s\n", r.Code, r.Message)
	}
	for _, tr := range rep.Tests {
		fmt.Fprintf(&b, "  test %s (%s) base=%s head=%s control=%s credited=%v %s\n", tr.Name, tr.File, tr.BaseOutcome, tr.HeadOutcome, tr.ControlOutcome, tr.Credited, tr.Reason)
		if tr.BaseDetail != "" {
			fmt.Fprintf(&b, "    base: %s\n", firstLines(tr.BaseDetail, 4))
		}
		if tr.HeadDetail != "" {
			fmt.Fprintf(&b, "    head: %s\n", firstLines(tr.HeadDetail, 4))
		}
	}
	for _, f := range rep.Tamper {
		fmt.Fprintf(&b, "  tamper %s %s:%d %s\n", f.Code, f.Path, f.Line, f.Message)
	}
	fmt.Fprintf(&b, "  suite targeted=%s %v full=%s %s\n", rep.Suite.Targeted.Outcome, rep.Suite.Targeted.Failed, rep.Suite.Full.Outcome, firstLines(rep.Suite.Full.Detail+rep.Suite.Targeted.Detail, 4))
	return b.String()
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n      ")
}

// TestSuiteFormat checks every case parses, has a valid label, and that the
// suite is the promised mix, without running anything.
func TestSuiteFormat(t *testing.T) {
	cases, err := loadSuite(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	var goCases, pyCases int
	byVerdict := map[verify.Verdict]int{}
	for _, c := range cases {
		if c.Python {
			pyCases++
		} else {
			goCases++
		}
		byVerdict[c.Verdict]++
		if strings.Contains(string(joinData(c.Head)), "{{fake-secret:") {
			t.Errorf("%s: unknown fake-secret placeholder", c.Name)
		}
	}
	if len(cases) < 40 {
		t.Errorf("%d cases; want at least 40", len(cases))
	}
	if goCases < len(cases)/3 || pyCases < len(cases)/3 {
		t.Errorf("%d Go and %d Python cases: the mix should be about even", goCases, pyCases)
	}
	for _, v := range validVerdicts {
		if byVerdict[v] == 0 {
			t.Errorf("no case is labelled %s", v)
		}
	}
	t.Logf("%d cases: %d Go, %d Python; by label %v", len(cases), goCases, pyCases, byVerdict)
}

func joinData(fs []txtar.File) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.Data...)
	}
	return b
}
