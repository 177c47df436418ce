package python

import (
	"context"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// runPy is mutate.Run with the Python engine alone.
func runPy(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change, opts mutate.Options, p verify.Progress) (*mutate.Report, error) {
	opts.Engines = []mutate.Engine{New()}
	return mutate.Run(ctx, r, dir, change, opts, p)
}
