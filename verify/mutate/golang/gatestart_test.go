package golang

import (
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// The gate's evidence prepared beside its runs and finished with the
// credited tests is the evidence GateEvidence gives; abandoned, it leaves
// nothing behind in its temporary directory.
func TestGateEvidenceStartAgreesWithGateEvidence(t *testing.T) {
	c := calcReport(t)
	credited := []verify.Test{{Language: "go", Package: "calc", Name: "TestSmallBBoundary"}}
	opts := mutate.Options{Workers: 2, CacheDir: c.cache, Engines: []mutate.Engine{New()}}
	want, err := mutate.GateEvidence(opts)(context.Background(), host.New(), c.dir, c.change, credited)
	if err != nil {
		t.Fatal(err)
	}
	if want.CreditedKills == 0 {
		t.Fatalf("fixture: the credited test kills nothing: %+v", want)
	}
	tmp := t.TempDir()
	opts.TempDir = tmp
	got, err := mutate.GateEvidenceStart(opts)(context.Background(), host.New(), c.dir, c.change)(credited)
	if err != nil {
		t.Fatal(err)
	}
	// Run times, and the goroutine numbers of a panic's excerpt, differ
	// between any two runs.
	for _, sum := range []*verify.MutationSummary{got, want} {
		for i := range sum.Mutants {
			sum.Mutants[i].Duration, sum.Mutants[i].Detail = 0, ""
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prepared evidence %+v\nwant %+v", got, want)
	}
	finish := mutate.GateEvidenceStart(opts)(context.Background(), host.New(), c.dir, c.change)
	if s, err := finish(nil); s != nil || err != nil {
		t.Fatalf("abandoned evidence gave %+v, %v", s, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("abandoned evidence left %d entries in its temporary directory", len(left))
	}
}
