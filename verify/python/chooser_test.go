package python

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
)

// probeCounter answers every interpreter probe as a Python with pytest
// (this is not the host runner, so nothing is kept on disk) and counts them.
type probeCounter struct{ runs atomic.Int32 }

func (p *probeCounter) Name() string { return "chooser-test" }

func (p *probeCounter) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p.runs.Add(1)
	return sandbox.Result{Stdout: []byte(c.Args[0] + "\n")}, nil
}

// TestChooserIsOneChoicePerProcess: every Chooser for the same configured
// interpreter and checkout answers from one adapter, so the second asks
// nothing; another configured interpreter is its own choice.
func TestChooserIsOneChoicePerProcess(t *testing.T) {
	ctx := context.Background()
	r := &probeCounter{}
	dir := t.TempDir()
	first, err := Chooser("/opt/chooser-test/python", "")(ctx, r, dir)
	if err != nil || first != "/opt/chooser-test/python" {
		t.Fatalf("first choice: %q, %v", first, err)
	}
	probes := r.runs.Load()
	again, err := Chooser("/opt/chooser-test/python", "")(ctx, r, dir)
	if err != nil || again != first || r.runs.Load() != probes {
		t.Errorf("second Chooser: %q, %v after %d more probes; want %q from the first's answer", again, err, r.runs.Load()-probes, first)
	}
	other, err := Chooser("/opt/chooser-test/other", "")(ctx, r, dir)
	if err != nil || other != "/opt/chooser-test/other" || r.runs.Load() == probes {
		t.Errorf("another configured interpreter: %q, %v; want its own probe", other, err)
	}
}
