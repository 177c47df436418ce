package golang

import (
	"context"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// runGo is mutate.Run with the Go engine alone.
func runGo(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change, opts mutate.Options, p verify.Progress) (*mutate.Report, error) {
	opts.Engines = []mutate.Engine{New()}
	return mutate.Run(ctx, r, dir, change, opts, p)
}
