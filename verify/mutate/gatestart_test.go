package mutate

import (
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// The gate's evidence prepared beside its runs and finished with the
// credited tests is the evidence GateEvidence gives; abandoned, it leaves
// nothing behind in its temporary directory.
func TestGateEvidenceStartAgreesWithGateEvidence(t *testing.T) {
	c := calcReport(t)
	credited := []verify.Test{{Language: "go", Package: "calc", Name: "TestSmallBBoundary"}}
	opts := Options{Workers: 2, CacheDir: c.cache}
	want, err := GateEvidence(opts)(context.Background(), host.New(), c.dir, c.change, credited)
	if err != nil {
		t.Fatal(err)
	}
	if want.CreditedKills == 0 {
		t.Fatalf("fixture: the credited test kills nothing: %+v", want)
	}
	tmp := t.TempDir()
	opts.TempDir = tmp
	got, err := GateEvidenceStart(opts)(context.Background(), host.New(), c.dir, c.change)(credited)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(got), comparable(want)) {
		t.Fatalf("prepared evidence %+v\nwant %+v", got, want)
	}
	finish := GateEvidenceStart(opts)(context.Background(), host.New(), c.dir, c.change)
	if s, err := finish(nil); s != nil || err != nil {
		t.Fatalf("abandoned evidence gave %+v, %v", s, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("abandoned evidence left %d entries in its temporary directory", len(left))
	}
}

// comparable is a summary without what two runs of the same mutants never
// share: how long each took and its test output (a panic's goroutine
// number, a timing line).
func comparable(s *verify.MutationSummary) *verify.MutationSummary {
	if s == nil {
		return nil
	}
	c := *s
	c.Mutants = append([]verify.Mutant(nil), s.Mutants...)
	for i := range c.Mutants {
		c.Mutants[i].Duration, c.Mutants[i].Detail = 0, ""
	}
	return &c
}
