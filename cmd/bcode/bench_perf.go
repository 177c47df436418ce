//go:build unix

package main

import (
	"context"
	"io"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench/perf"
)

func init() {
	registerBench(benchSub{
		name:    "perf",
		summary: "side-by-side performance tables: bcode against its baselines, with ratios (bcode bench perf -h)",
		run:     benchPerf,
	})
}

// benchPerf runs one of perf's tables; the tables parse their own flags
// and keep a ledger of their own, not the user's (eng is unused).
func benchPerf(ctx context.Context, _ *app.Engine, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		perf.Usage(stdout)
		return 0
	}
	return perf.Run(ctx, args, stdout, stderr)
}
