//go:build !unix

package main

import (
	"context"
	"io"

	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	registerBench(benchSub{
		name:    "perf",
		summary: "side-by-side performance tables (Linux and macOS only: they measure with getrusage)",
		run:     benchPerf,
	})
}

// benchPerf says why the tables do not run here: they read the CPU time
// and memory of the processes they start with getrusage, which Windows
// does not have.
func benchPerf(_ context.Context, _ *app.Engine, _ []string, _, stderr io.Writer) int {
	errorf(stderr, "bcode bench perf", "the performance tables run on Linux and macOS only (they measure with getrusage)")
	return 1
}
